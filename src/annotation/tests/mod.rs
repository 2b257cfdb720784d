//! Tests across the annotation modules; each file is named for what it exercises.

mod attach;
mod eval;
mod garbage;
mod grammar;
mod infer;
mod side_file;
