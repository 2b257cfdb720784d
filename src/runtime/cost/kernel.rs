//! What the cost model knows of one rewritten kernel: its measured times in each form, kept on
//! disk under a key of the build they belong to.

use super::habits;
use super::model::{Times, Variant};
use std::sync::Arc;

#[derive(Debug, Default)]
pub struct KernelModel {
    pub times: Times,
    /// Key of the kernel's times in the disk cache (device, rewritten copy, program hash), once
    /// the times were looked up there.
    pub disk_key: Option<Arc<str>>,
    /// The form the last launch ran in, so that the log says when it changes.
    pub last: Option<Variant>,
    /// Launches that could not be timed; past a few the model stops asking.
    pub untimed: u32,
}

impl KernelModel {
    /// Takes the kernel's times and habits from the disk cache under `key`.
    pub fn load(&mut self, key: &str) {
        let key: Arc<str> = key.into();
        if let Some(t) = crate::cache::disk::get_json::<Times>("times", &key) {
            crate::log::debug(&format!("kernel {key}: times from the cache: {t:?}"));
            self.times = t;
        }
        habits::preload(&key);
        self.disk_key = Some(key);
    }

    /// Keeps a launch's measured time per structure (or counts that it could not be timed).
    pub fn record(&mut self, kernel: &str, ran: Variant, ns: Option<f64>, structures: f64) {
        let Some(ns) = ns else {
            self.untimed += 1;
            return;
        };
        self.times.record(ran, ns / structures);
        crate::stats::kernel_time(kernel, ran.form(), ns);
        if let Some(key) = &self.disk_key {
            crate::cache::disk::put_json("times", key, &self.times);
        }
    }
}
