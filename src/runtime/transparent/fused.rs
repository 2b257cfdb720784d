//! Fused conversions: a launch that runs in ASTA on buffers still in their host layout, whose
//! kernel has a staged copy, runs that copy instead, loading each work-group's slice of every
//! buffer in AoS order and storing it back in ASTA order. The launch converts the buffers as it
//! runs, and the conversion kernel, which reads and writes every buffer once more, is saved.
//!
//! Why the bytes come out as the conversion would leave them: a slice of whole ASTA tiles that
//! starts on a tile holds the same words as the same structures in AoS, only in another order
//! (`rewrite::stage`). So every slice below the buffer's extent M must be a whole work-group,
//! and every structure below M must lie in one: the launch is 1-D, starts at global id 0, its
//! work-group size is a multiple of the tile, M a multiple of the work-group size, and its
//! global size reaches M. The staged copy's slices past M keep their AoS order, as the
//! conversion leaves the bytes past the extent. The launch must also be sure to run once
//! enqueued (nothing in its wait list that the application has not finished), since if it
//! never ran the bytes would stay AoS; a launch that fails on the device puts the state back
//! as a failed conversion does (`convert::fused_enqueued`).
//!
//! Whatever does not hold takes the usual path: the conversion, then the ASTA copy.

use super::super::access::BufferNeed;
use super::super::dims::Dims;
use super::super::state::{Current, Need};
use super::private::TransparentPlan;
use crate::layout::Layout;
use opencl_sys::cl_event;

/// How a launch runs fused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fusion {
    /// The staged copy's work-group size.
    pub local: usize,
    /// Per staged parameter, the structures below which its slices are loaded and stored in
    /// ASTA order: none on load, the buffer's extent on store.
    pub orders: Vec<(String, (u64, u64))>,
}

/// How this launch of the ASTA copy can run fused with the conversion of its buffers, given
/// the staged copy's work-group size for it (`local`), or why it cannot.
pub fn fusion(
    plan: &TransparentPlan,
    needs: &[BufferNeed],
    dims: &Dims,
    local: Option<usize>,
    user: &[cl_event],
) -> Result<Fusion, String> {
    if !crate::config::get().fuse {
        return Err("CLAYOUT_FUSE=0".into());
    }
    if plan.kernel.staged.is_none() {
        return Err("the kernel has no staged copy".into());
    }
    let local = local.ok_or("the staged copy cannot run this launch")?;
    if dims.task || dims.offset || dims.global.len() != 1 {
        return Err("not a 1-D launch from global id 0".into());
    }
    let tile = plan.program.tile as usize;
    if tile == 0 || !local.is_multiple_of(tile) {
        return Err(format!("its work-groups of {local} are not whole tiles of {tile}"));
    }
    if !crate::cl::info::all_complete(user) {
        // It might never run, and the bytes would stay AoS.
        return Err("its wait list is not complete".into());
    }
    let device = needs.iter().filter(|n| matches!(n.need, Need::Device(_))).count();
    if device != plan.kernel.indices.len() {
        return Err("not every staged buffer is to be converted".into());
    }
    let mut orders = Vec::new();
    for (param, &i) in &plan.kernel.indices {
        let n = needs.iter().find(|n| n.arg == Some(i)).ok_or_else(|| format!("{param} is not a buffer"))?;
        let Need::Device(d) = n.need else { return Err(format!("{param} stays in host layout")) };
        let m = d.shape.m;
        let words = plan.kernel.layouts.get(param).map(|l| (l.words, l.word_bytes));
        let fits = d.host == Layout::Aos
            && d.device == (Layout::Asta { t: tile as u32 })
            && words == Some((d.shape.s, d.shape.w))
            && !n.must
            && n.buffer.parent.is_none();
        if !fits {
            return Err(format!("{param} is not an AoS buffer converted to the copies' ASTA"));
        }
        if m == 0 || !m.is_multiple_of(local as u64) {
            return Err(format!("{param} holds {m} structures, not whole work-groups of {local}"));
        }
        if dims.global[0] < m {
            return Err(format!("the launch covers {} of the {m} structures of {param}", dims.global[0]));
        }
        let st = n.buffer.lock_unchanged();
        if st.current != Current::Host || !st.defined || st.pinned.is_some() || st.maps > 0 {
            return Err(format!("{param} is not in host layout with defined bytes"));
        }
        orders.push((param.clone(), (0, m)));
    }
    orders.sort();
    Ok(Fusion { local, orders })
}
