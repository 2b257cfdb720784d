//! Tests across the source layer's modules; each file is named for what it exercises.

mod signature;
mod struct_layout;
mod structs;
