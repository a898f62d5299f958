//! The signals that stop a role: Ctrl-C (SIGINT) and, on Unix, SIGTERM.
//!
//! The programs wait on [`signal`] and then shut their role down gracefully: stop
//! accepting, send every connected client `Reconnect` (spec §3.1: empty host and port 0,
//! "this same endpoint", so that a restarted server gets its clients back), write what is
//! queued and close ([`Pool::shutdown`](crate::pool::Pool::shutdown),
//! [`Proxy::shutdown`](crate::proxy::Proxy::shutdown)).

/// Resolves when the process receives SIGTERM or SIGINT (Ctrl-C). If a signal handler
/// cannot be installed, that signal is not waited for (the other still is).
pub async fn signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}
