//! Export functions whose types are checked once per component instead of on every call: every
//! instance of one component has the same export types, so wasmtime's type walk (records,
//! variants and strings compared name by name) is paid by the first call only.

use std::sync::atomic::{AtomicBool, Ordering};

use wasmtime::AsContext;
use wasmtime::component::{ComponentNamedList, Func, Lift, Lower, TypedFunc};

/// One export of one component, always called with one signature: the first call checks the
/// function's type against it, later calls trust that check.
#[derive(Debug, Default)]
pub(super) struct CheckedOnce {
    checked: AtomicBool,
}

impl CheckedOnce {
    /// `func` as a typed function, checked against `(P, R)` unless an earlier call already was.
    ///
    /// Every call must pass the same export of instances of the same component, with the same
    /// `P` and `R`: the owner holds one `CheckedOnce` per export it calls, beside the
    /// `InstancePre` its instances come from, and calls it from one place.
    pub(super) fn typed<P, R>(&self, func: Func, store: impl AsContext) -> wasmtime::Result<TypedFunc<P, R>>
    where
        P: ComponentNamedList + Lower,
        R: ComponentNamedList + Lift,
    {
        if self.checked.load(Ordering::Acquire) {
            // SAFETY: an earlier call checked this export's type against `(P, R)` in another
            // instance of the same component (the contract above); instances of one component
            // share its types, so the check holds for this one too.
            return Ok(unsafe { TypedFunc::new_unchecked(func) });
        }
        let typed = func.typed::<P, R>(store)?;
        self.checked.store(true, Ordering::Release);
        Ok(typed)
    }
}
