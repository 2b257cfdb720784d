//! Fault injection for the reliability tests: with the `fault-injection` feature, setting
//! `CLAYOUT_FAULT=site[,site...]` makes the named calls clayout issues on its own behalf fail
//! (`conversion`, `probe`, ...). Without the feature `inject` is a constant false.

#[cfg(feature = "fault-injection")]
pub fn inject(site: &str) -> bool {
    static SITES: once_cell::sync::Lazy<Vec<String>> = once_cell::sync::Lazy::new(|| {
        crate::config::get()
            .fault
            .as_deref()
            .map(|v| v.split(',').map(|s| s.trim().to_string()).collect())
            .unwrap_or_default()
    });
    SITES.iter().any(|s| s == site || s == "all")
}

#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub fn inject(_site: &str) -> bool {
    false
}
