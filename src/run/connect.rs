//! How a run reaches registries, and its session, made when it is first needed.

use crate::auth::AuthStore;
use crate::reference::ImageRef;
use crate::session::Session;
use crate::source::registry::ClientOptions;

/// How a run reaches registries: the client options (`max_requests`: the run's jobs) and the
/// credentials.
#[derive(Debug, Clone)]
pub struct Connection {
    /// Client options.
    pub options: ClientOptions,
    /// Credentials.
    pub auth: AuthStore,
}

/// A run's way to the world: the connection, and the session once one is made.
pub(super) struct Link {
    connection: Connection,
    session: Option<Session>,
}

impl Link {
    /// No session yet.
    pub(super) fn new(connection: Connection) -> Link {
        Link {
            connection,
            session: None,
        }
    }

    /// The run's session for `refs`. A session is still made for the references it will
    /// read (plain-HTTP probes, token scopes): after the release was read, the targets get
    /// its successor (same credentials, same `--timeout` deadline, request counters of
    /// their own).
    pub(super) async fn session(&mut self, refs: &[ImageRef]) -> &Session {
        let next = match &self.session {
            Some(s) => s.successor(refs).await,
            None => {
                let Connection { options, auth } = &self.connection;
                Session::new(options, auth.clone(), refs).await
            }
        };
        self.session.insert(next)
    }

    /// The request counters of the session, when a registry was contacted.
    pub(super) fn stats(&self) -> Option<String> {
        Some(self.session.as_ref()?.stats()?.summary())
    }
}
