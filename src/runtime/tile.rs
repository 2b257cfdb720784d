//! Which ASTA tile a program's kernels are built with: the application's own `-D CLAYOUT_TILE=T`,
//! else `CLAYOUT_TILE`, else a searched tile, else the device's default.

use crate::annotation::TILE_MACRO;
use opencl_sys::cl_device_id;

/// The tile a program built with the application's `options` uses, and the options that
/// define it: the application's own `-D CLAYOUT_TILE=T`, else CLAYOUT_TILE, else `searched`, else
/// the device's.
pub fn with_tile(options: &str, device: Option<cl_device_id>, searched: Option<u32>) -> (u32, String) {
    match user_tile(options) {
        Some(t) => (t, options.to_string()),
        None => {
            let t = match (crate::config::get().tile.0, searched) {
                (Some(t), _) | (None, Some(t)) => t,
                (None, None) => device.map(crate::marshal::default_tile).unwrap_or(32),
            };
            (t, format!("{options} -D {TILE_MACRO}={t}"))
        }
    }
}

/// The tile the build options or CLAYOUT_TILE fix, if they do (then no tile is searched).
pub fn fixed_tile(options: &str) -> Option<u32> {
    user_tile(options).or(crate::config::get().tile.0)
}

fn user_tile(options: &str) -> Option<u32> {
    let at = options.find(&format!("{TILE_MACRO}="))? + TILE_MACRO.len() + 1;
    options[at..].split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}
