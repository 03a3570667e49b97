//! The authority's error windows (`authority_errors`): while one is open for a caller, the
//! authority host answers that caller's requests with an [`ErrorStatus`] and applies nothing.
//! The nemesis opens and closes windows; the backend's server asks [`ErrorWindows::answer_for`]
//! with the caller's host name (the peer of the connection, [`leasesim_net::Conn::peer`]) at the
//! start of each request: the gRPC lease service before its handler, the API server before it
//! routes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use super::schedule::ErrorStatus;

/// The open windows, by target (`None`: every caller); `Clone` shares them. The world keeps
/// one across the authority's restarts.
#[derive(Clone, Debug, Default)]
pub struct ErrorWindows {
    open: Arc<Mutex<BTreeMap<Option<String>, ErrorStatus>>>,
}

impl ErrorWindows {
    /// From now on, answer `to`'s requests (every caller's with `None`) with `status`.
    pub fn open(&self, to: Option<String>, status: ErrorStatus) {
        self.lock().insert(to, status);
    }

    /// Ends the window of `to` (`None`: the window for every caller).
    pub fn close(&self, to: &Option<String>) {
        self.lock().remove(to);
    }

    /// Ends every window.
    pub fn heal(&self) {
        self.lock().clear();
    }

    /// The status a request from host `peer` is answered with, if a window covers it: the
    /// window for that caller, else the one for every caller.
    pub fn answer_for(&self, peer: Option<&str>) -> Option<ErrorStatus> {
        let open = self.lock();
        peer.and_then(|peer| open.get(&Some(peer.to_owned())))
            .or_else(|| open.get(&None))
            .copied()
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<Option<String>, ErrorStatus>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_for_one_caller_wins_over_the_one_for_all() {
        let windows = ErrorWindows::default();
        assert_eq!(windows.answer_for(Some("replica-1")), None);
        windows.open(None, ErrorStatus::Unavailable);
        windows.open(Some("replica-2".into()), ErrorStatus::PermissionDenied);
        assert_eq!(
            windows.answer_for(Some("replica-1")),
            Some(ErrorStatus::Unavailable)
        );
        assert_eq!(
            windows.answer_for(Some("replica-2")),
            Some(ErrorStatus::PermissionDenied)
        );
        windows.close(&None);
        assert_eq!(windows.answer_for(Some("replica-1")), None);
        assert_eq!(windows.answer_for(None), None);
        windows.heal();
        assert_eq!(windows.answer_for(Some("replica-2")), None);
    }
}
