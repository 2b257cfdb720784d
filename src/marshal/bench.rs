//! The benchmark's knobs (feature `bench`, for clayout-bench and tests/marshal_variants.rs):
//! a process-wide tuning that conversions enqueued afterwards use, and the names of the kernels
//! a conversion takes. clayout itself reads no variable for them.

use super::device::{default_tile, facts};
use super::plan::{self, P100Run, Params, Step, Tuning};
use crate::layout::{Layout, Shape};
use opencl_sys::cl_device_id;
use parking_lot::RwLock;

static TUNING: RwLock<Tuning> = RwLock::new(Tuning::DEFAULT);

/// Changes the tuning for conversions enqueued from now on (the benchmark's sweep).
pub fn set_tuning(t: Tuning) {
    *TUNING.write() = t;
}

pub fn tuning() -> Tuning {
    *TUNING.read()
}

/// Names the kernels a conversion of this shape would use on this device.
pub fn describe(device: cl_device_id, shape: Shape, from: Layout, to: Layout, offset: u64) -> String {
    let facts = facts(device);
    let mut out = Vec::new();
    for st in plan::steps(shape, from, to, default_tile(device)) {
        match plan::params(&facts, shape.s, st.tile(), shape.w, offset.is_multiple_of(16), &tuning()) {
            Ok(p) => out.push(format!("{st:?}:{}", kernels(st, &p))),
            Err(e) => out.push(format!("{st:?}:{e}")),
        }
    }
    out.join(" + ")
}

/// The main kernel of a step, with its parameters.
fn kernels(st: Step, p: &Params) -> String {
    match st {
        Step::AosToAsta(_) | Step::AstaToAos(_) if p.use_bs => format!("bs(K={},L={},vec={})", p.bs_k, p.bs_l, p.vec),
        Step::AosToAsta(_) | Step::AstaToAos(_) => format!("p010(L={},bpw={})", p.p010_l, p.p010_bpw),
        _ => match p.p100 {
            P100Run::PerStart | P100Run::PerStartVolatile => {
                format!("{}(L={},pv={})", p.p100_name(), p.p100_wi_l, p.p100_pv)
            }
            P100Run::Persistent { items } => format!("p100_wp(L={},pv={},G={items})", p.p100_wi_l, p.p100_pv),
            P100Run::PerGroup => format!("p100_wg(L={})", p.p100_wg_l),
        },
    }
}
