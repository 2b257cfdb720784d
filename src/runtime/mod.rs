//! The DL runtime (thesis chapter 5.5): keeps every buffer's layout, converts buffers into the
//! layout an annotated kernel needs before it runs, and back before the host can see them.
//!
//! - `state`: the per-buffer state machine (pure);
//! - `convert`: carrying out a plan on a queue, with the host fallback;
//! - `access`: host-visible accesses; `launch`: kernel launches;
//! - `program`: annotations found at program creation, build options, structure probing;
//! - `timing`: device time of conversions on profiling queues.

pub mod access;
pub mod convert;
pub mod launch;
pub mod program;
pub mod state;
pub mod timing;

use crate::registry::BufferInfo;

/// The application's last reference to a buffer is gone.
pub fn buffer_released(info: &BufferInfo) {
    convert::forget(info);
}
