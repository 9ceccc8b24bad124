//! Session transcript tests against fake plugins, both protocol eras.
