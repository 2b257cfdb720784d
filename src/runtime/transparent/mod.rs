//! The transparent mode at run time (docs/annotations.md, "Transparent mode"). Kernels annotated
//! without a device layout (`//DL: AoS: p[n]`) get an ASTA copy from the rewriter when their
//! program is created (`rewrite`); the copies are built in a private program (`private`); each
//! application kernel object gets its own copy objects (`copies`); each launch then runs either
//! a copy or the application's kernel (`launch`), the staged copy also in place of a conversion
//! (`fused`), and the launches the cost model asks to time are timed (`timed`).

pub mod copies;
pub mod fused;
pub mod launch;
pub mod private;
pub mod repeat;
pub mod rewrite;
pub mod timed;

pub use copies::KernelCopies;
pub use private::{Rewrites, TransparentPlan};
