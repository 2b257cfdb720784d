//! The layout state machine of one buffer, in one place.
//!
//! A tracked buffer is always in exactly one of two states:
//! - `Host`: its bytes are in the layout the application wrote them in (AoS or SoA, whatever the
//!   annotation calls it). Every buffer starts here, and every host-visible access finds it here.
//! - `Device(d)`: its first `d.shape.bytes()` bytes are in the device layout `d.device` (ASTA)
//!   of the host layout `d.host`; the rest of the buffer is untouched.
//!
//! Transitions (the runtime enqueues the conversions on the queue of the command that needs
//! them, and orders that command after them):
//! - a launch whose annotation asks for `d` moves `Host -> Device(d)`, or `Device(c) -> Host ->
//!   Device(d)` when another layout is current (the thesis's rule: back to host, then on); a
//!   launch that converts its buffers as it runs (a fused conversion, `convert::fuse`) makes the
//!   move `Host -> Device(d)` itself, and stands for the conversion;
//! - a launch without an annotation for the buffer, and every host-visible access (read, map,
//!   copy, fill of part, write of part, migration to the host, native kernel), moves
//!   `Device(c) -> Host`;
//! - an access that overwrites the whole buffer (whole write, whole fill, map with
//!   `CL_MAP_WRITE_INVALIDATE_REGION` of everything, migration with undefined content) resets
//!   to `Host` with no conversion: the old bytes no longer matter;
//! - a sub-buffer is never converted itself (its bytes are a window onto its parent's); any
//!   command that uses a sub-buffer first brings the parent to `Host`, so the window shows the
//!   bytes where the application put them;
//! - a buffer whose device conversion failed, where the command could run without it, stays
//!   `Host` (pinned) for the rest of its life;
//! - a buffer mapped by the host stays `Host` until its last map is unmapped: kernels may read
//!   a buffer mapped for reading while the host reads the map, which may be the buffer's own
//!   memory, so its bytes must not move (a sub-buffer's maps count for its parent).

use crate::layout::{Layout, Shape};

/// A device layout of one buffer: which prefix, converted from which host layout to which.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeviceLayout {
    pub host: Layout,
    pub device: Layout,
    pub shape: Shape,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Current {
    #[default]
    Host,
    Device(DeviceLayout),
}

/// What the next command needs the buffer to be in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    Host,
    /// Host layout, and the command overwrites every byte: no conversion needed.
    HostOverwrite,
    Device(DeviceLayout),
}

/// One in-place conversion to enqueue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    pub shape: Shape,
    pub from: Layout,
    pub to: Layout,
    /// True when the step brings the buffer back to its host layout.
    pub to_host: bool,
}

impl DeviceLayout {
    fn to_host(self) -> Step {
        Step { shape: self.shape, from: self.device, to: self.host, to_host: true }
    }
    fn to_device(self) -> Step {
        Step { shape: self.shape, from: self.host, to: self.device, to_host: false }
    }
}

/// The conversions that take a buffer from `current` to what `need` asks, in order.
pub fn plan(current: Current, need: Need) -> Vec<Step> {
    match (current, need) {
        (Current::Host, Need::Host | Need::HostOverwrite) => vec![],
        (Current::Device(_), Need::HostOverwrite) => vec![],
        (Current::Host, Need::Device(d)) => vec![d.to_device()],
        (Current::Device(c), Need::Host) => vec![c.to_host()],
        (Current::Device(c), Need::Device(d)) if c == d => vec![],
        (Current::Device(c), Need::Device(d)) => vec![c.to_host(), d.to_device()],
    }
}

/// Whether a command that overwrites every structure of `need`'s device layout before reading
/// any (an `out` annotation) can take the buffer from `current` without a conversion: the
/// bytes a conversion would arrange are all overwritten, so only the state changes. Not when
/// the buffer is in a device layout over more bytes than `need`'s: the bytes past `need`'s
/// structures would then be taken for host-layout bytes.
pub fn overwrite_skips(current: Current, need: Need) -> bool {
    match (current, need) {
        (Current::Host, Need::Device(_)) => true,
        (Current::Device(c), Need::Device(d)) => c.shape.bytes() <= d.shape.bytes(),
        _ => false,
    }
}

/// The state after `need` is met.
pub fn after(need: Need) -> Current {
    match need {
        Need::Host | Need::HostOverwrite => Current::Host,
        Need::Device(d) => Current::Device(d),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(t: u32, m: u64) -> DeviceLayout {
        DeviceLayout { host: Layout::Aos, device: Layout::Asta { t }, shape: Shape::new(m, 5, 4) }
    }

    #[test]
    fn an_overwrite_skips_only_what_it_overwrites() {
        let dev = |m| Current::Device(d(32, m));
        assert!(overwrite_skips(Current::Host, Need::Device(d(32, 100))));
        assert!(overwrite_skips(dev(100), Need::Device(d(64, 100))));
        assert!(overwrite_skips(dev(50), Need::Device(d(32, 100))));
        // Structures 100..200 would stay arranged for 200 and be read as host layout.
        assert!(!overwrite_skips(dev(200), Need::Device(d(32, 100))));
        assert!(!overwrite_skips(dev(100), Need::Host));
        assert!(!overwrite_skips(Current::Host, Need::HostOverwrite));
    }

    #[test]
    fn host_to_device_and_back() {
        assert_eq!(
            plan(Current::Host, Need::Device(d(32, 100))),
            vec![Step { shape: d(32, 100).shape, from: Layout::Aos, to: Layout::Asta { t: 32 }, to_host: false }]
        );
        let back = plan(Current::Device(d(32, 100)), Need::Host);
        assert_eq!(back.len(), 1);
        assert!(back[0].to_host && back[0].from == Layout::Asta { t: 32 } && back[0].to == Layout::Aos);
    }

    #[test]
    fn repeated_need_converts_nothing() {
        assert!(plan(Current::Device(d(32, 100)), Need::Device(d(32, 100))).is_empty());
        assert!(plan(Current::Host, Need::Host).is_empty());
    }

    #[test]
    fn another_device_layout_goes_through_host() {
        let steps = plan(Current::Device(d(32, 100)), Need::Device(d(64, 100)));
        assert_eq!(steps.len(), 2);
        assert!(steps[0].to_host && !steps[1].to_host);
        assert_eq!(steps[1].to, Layout::Asta { t: 64 });
        // Same tile, different extent: also a different layout of the bytes.
        assert_eq!(plan(Current::Device(d(32, 100)), Need::Device(d(32, 90))).len(), 2);
    }

    #[test]
    fn overwrite_resets_without_conversion() {
        assert!(plan(Current::Device(d(32, 100)), Need::HostOverwrite).is_empty());
        assert_eq!(after(Need::HostOverwrite), Current::Host);
    }
}
