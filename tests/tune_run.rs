//! The tile search and the conversion costs the cost model uses (src/runtime/tune.rs), on PoCL:
//! a real GPU runs the search only for itself, so this is where CI exercises it.

use clayout::cl::api;
use clayout::layout::Layout;
use clayout::runtime::cost::tune::{search, Tuned};
use opencl_sys::*;
use std::ptr;

fn context() -> Option<(cl_context, cl_device_id)> {
    unsafe {
        let mut n: cl_uint = 0;
        if api().clGetPlatformIDs(0, ptr::null_mut(), &mut n) != CL_SUCCESS || n == 0 {
            eprintln!("no OpenCL platform: skipped");
            return None;
        }
        let mut ps = vec![ptr::null_mut(); n as usize];
        api().clGetPlatformIDs(n, ps.as_mut_ptr(), ptr::null_mut());
        let mut dev: cl_device_id = ptr::null_mut();
        ps.into_iter()
            .find(|&p| api().clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &mut dev, ptr::null_mut()) == CL_SUCCESS)?;
        let mut err = 0;
        let ctx = api().clCreateContext(ptr::null(), 1, &dev, None, ptr::null_mut(), &mut err);
        assert_eq!(err, CL_SUCCESS);
        Some((ctx, dev))
    }
}

#[test]
fn search_picks_a_candidate_and_times_both_directions() {
    let Some((ctx, dev)) = context() else { return };
    let tiles = [32, 64, 128];
    for (s, w, host) in [(5, 4, Layout::Aos), (19, 4, Layout::Aos), (8, 8, Layout::Aos), (32, 4, Layout::Soa)] {
        let t: Tuned =
            search(ctx, dev, s, w, host, &tiles).unwrap_or_else(|| panic!("S={s} w={w} {host:?}: nothing measured"));
        assert!(tiles.contains(&t.tile), "{t:?}");
        assert!(t.searched, "{t:?}");
        for rate in [t.to_ns_per_byte, t.back_ns_per_byte] {
            assert!(rate.is_finite() && rate > 0.0, "S={s} w={w} {host:?}: {t:?}");
        }
        // One tile: no streaming kernel, the conversions still timed.
        let one = search(ctx, dev, s, w, host, &[64]).expect("one tile");
        assert_eq!((one.tile, one.searched), (64, false));
        // The record survives the cache's JSON.
        let back: Tuned = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
        assert_eq!((back.tile, back.searched), (t.tile, t.searched));
        assert!(
            (back.to_ns_per_byte / t.to_ns_per_byte - 1.0).abs() < 1e-9
                && (back.back_ns_per_byte / t.back_ns_per_byte - 1.0).abs() < 1e-9
        );
    }
    unsafe { api().clReleaseContext(ctx) };
}
