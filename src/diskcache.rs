//! Placeholder until the on-disk cache lands: keeps nothing.
use opencl_sys::cl_device_id;

pub fn device_key(device: cl_device_id) -> String {
    format!("{:x}", device as usize)
}
pub fn get_json<T: serde::de::DeserializeOwned>(_kind: &str, _key: &str) -> Option<T> {
    None
}
pub fn put_json<T: serde::Serialize>(_kind: &str, _key: &str, _value: &T) {}
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}
