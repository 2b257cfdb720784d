//! The DL runtime (thesis chapter 5.5): keeps every buffer's layout, converts buffers into the
//! layout an annotated kernel needs before it runs, and back before the host can see them.
//!
//! From the bottom (each file imports only the ones above it in this list):
//! - `callbacks`: the application's callbacks that the driver runs on its threads; `stop`: the
//!   process-wide stop of conversions; `suggest`: what `CLAYOUT_SUGGEST` writes; `state`: the per-buffer state machine
//!   (pure, read this one first); `tile`: which tile a build uses; `probe`: clayout's small
//!   programs; `timing`: device time of conversions; `plan`, `dims`: what a launch asks;
//! - `cost/`: the cost model, its inputs, what it learns and measures;
//! - `buffers`: the runtime's record of every buffer;
//! - `order`: conversions ordered against the application's commands on every queue and thread;
//!   `untracked`: a declined run left off the tracked runtime until it needs it;
//! - `convert`: carrying out a plan on a queue, with the host fallback;
//! - `access`: host-visible accesses and the wait list of every command;
//! - `transparent/`: rewritten kernels, their private program, and which form each launch runs;
//! - `source`: the program as the device compiler sees it (preprocessed with the build's options);
//! - `program`: annotations found when the program is built, build options, per-kernel plans;
//! - `kernels`: the runtime's record of every kernel object; `launch`: kernel launches;
//! - `context`: the application's last release of a context; `refs`: reference counts as the
//!   application would see them without clayout; `worker`: clayout's own thread,
//!   where its builds run.

pub mod access;
pub mod buffers;
pub mod callbacks;
pub mod chunked;
pub mod context;
pub mod convert;
pub mod cost;
pub mod dims;
pub mod helper;
pub mod kernels;
pub mod lane;
pub mod launch;
pub mod order;
pub mod pinned;
pub mod plan;
pub mod probe;
pub mod profiling;
pub mod program;
pub mod refs;
pub mod source;
pub mod speculate;
pub mod state;
pub mod stop;
pub mod suggest;
pub mod tile;
pub mod timing;
pub mod transparent;
pub mod untracked;
pub mod worker;
pub mod world;
