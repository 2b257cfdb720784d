//! The DL runtime suite (tests/suites/dl_runtime.rs) with clayout preloaded (LD_PRELOAD);
//! tests/layer_route.rs runs the same suite with clayout as a loader layer.

mod common;

const ROUTE: common::Route = common::Route::Preload;

#[path = "suites/dl_runtime.rs"]
mod dl_runtime;
