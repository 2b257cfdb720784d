//! clayout: an LD_PRELOAD shim that keeps OpenCL applications' arrays of structures in the
//! layout their kernels access fastest.
//!
//! The modules form layers, each importing only from itself and the layers below it
//! (docs/architecture.md has the table; tests/layers.rs checks it), from the bottom:
//! `config`/`log`/`fault`/`guard`/`warm`, `cl`, `registry`, `stats`, `cache`, `clc`, `layout`,
//! `annotation`, `rewrite`, `marshal`, `runtime`, `hooks`, `exports`.

pub mod config;
pub mod fault;
pub mod guard;
pub mod log;
pub mod warm;

pub mod cl;

pub mod registry;

pub mod stats;

pub mod cache;

pub mod clc;

pub mod layout;

pub mod annotation;

pub mod rewrite;

pub mod marshal;

pub mod runtime;

mod hooks;

pub mod exports;

pub use guard::guard;
