//! The real OpenCL library and clayout's safe way of calling it.
//!
//! - `table`: the one table of entry points; `api`: the real library's function pointers
//!   (`Api`) and the call index (`FnId`) made from it; `real`: finding the library once.
//! - `layer`: clayout loaded by an OpenCL loader as a layer (`dispatch`: the loader's table;
//!   `object`: which loaded object an address is in); then `api()` calls down through the
//!   table the loader handed over instead of the library `real` found.
//! - `handle`: owned references (`Event`, `Kernel`, `Mem`, `Program`, `Queue`), released on drop.
//! - `info`: typed `clGet*Info` queries; `cmd`: safe wrappers of the calls clayout makes on its
//!   own behalf (markers, launches, transfers, maps); `build`: programs built with their log.
//! - `error`: a failed call, with the entry point and its code.
//!
//! Outside this module only the FFI boundary (`hooks`, `exports`) calls `api()` directly, to
//! forward the application's own calls with the application's own pointers. Every other layer
//! uses the safe functions here: a handle given to them must be a live object, either one
//! clayout holds a reference to or one the application passed to the call in progress.

// The functions of this module take OpenCL handles, which are opaque pointers that only the
// library dereferences: a handle's validity is the module's contract (above), not something an
// `unsafe fn` marker at every call would make the caller check any better.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

pub mod api;
pub mod build;
pub mod cmd;
pub mod dispatch;
mod error;
mod handle;
pub mod info;
pub mod layer;
mod object;
pub mod real;
pub(crate) mod table;
pub mod thread;

pub use api::{FnId, FN_COUNT, FN_NAMES};
pub use error::{code_name, Error, Result};
pub use handle::{live_in, Context, Event, HandleMap, Kernel, Mem, Program, Queue};
pub use real::{api, preloaded, source};
