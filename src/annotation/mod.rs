//! `//DL:` annotations: grammar, side file, extents (to be written).
