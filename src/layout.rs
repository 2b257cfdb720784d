//! Layout algebra: where word s of structure i lives in AoS, SoA and ASTA (to be written).
