//! In-place layout conversions on the device (to be written).
