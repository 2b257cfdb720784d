//! What clayout keeps across runs (docs/cache.md): `disk`, one checked file per record, keyed by
//! text and by device, written off the application's threads (`writer`); `binaries`, clayout's
//! own programs built through it as device binaries.

pub mod binaries;
pub mod disk;
mod writer;
