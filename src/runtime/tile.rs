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
        // An invalid value of the application's is left to its own kernels (the callers check
        // `user_tile_raw` and use none of clayout's kernels on it).
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

/// The tile the application's own options define, if they define one.
fn user_tile(options: &str) -> Option<u32> {
    user_tile_raw(options).and_then(Result::ok)
}

/// What the application's options say of the tile: nothing, a valid tile, or why the value they
/// give is not one (clayout's kernels and copies divide by it).
pub fn user_tile_raw(options: &str) -> Option<Result<u32, String>> {
    let at = options.find(&format!("{TILE_MACRO}="))? + TILE_MACRO.len() + 1;
    let value: String = options[at..].chars().take_while(|c| !c.is_whitespace()).collect();
    Some(match value.parse::<u32>() {
        Ok(t) if t.is_power_of_two() && t <= 1024 => Ok(t),
        _ => {
            Err(format!("the application's own -D {TILE_MACRO}={value} is not a tile (a power of two from 1 to 1024)"))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_applications_tile_is_read_and_checked() {
        assert_eq!(user_tile_raw("-O2"), None);
        assert_eq!(user_tile_raw("-D CLAYOUT_TILE=64 -O2"), Some(Ok(64)));
        assert!(user_tile_raw("-DCLAYOUT_TILE=0").is_some_and(|r| r.is_err()));
        assert!(user_tile_raw("-D CLAYOUT_TILE=48").is_some_and(|r| r.is_err()));
        assert!(user_tile_raw("-D CLAYOUT_TILE=32u").is_some_and(|r| r.is_err()));
        assert!(user_tile_raw("-D CLAYOUT_TILE=").is_some_and(|r| r.is_err()));
    }
}
