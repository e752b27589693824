//! [`Server`]: starts the server `toolbelt serve` starts, from a library.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use toolbelt_core::Registry;
use toolbelt_host::{Database, EncoderLoad, EncoderRole};
use toolbelt_store::WatchHandle;

use crate::config::{ConfigError, ServerConfig};
use crate::state::{AppState, StateError};

/// Starts a server: [`Server::builder`].
#[derive(Debug)]
#[non_exhaustive]
pub struct Server;

impl Server {
    /// A builder of a server with the settings of `config`.
    pub fn builder(config: ServerConfig) -> ServerBuilder {
        ServerBuilder {
            config,
            tools: Tools::None,
            instance: None,
            encoders: Vec::new(),
            routines: true,
        }
    }
}

/// Builds and starts a server ([`ServerBuilder::start`]).
#[must_use]
pub struct ServerBuilder {
    config: ServerConfig,
    tools: Tools,
    instance: Option<String>,
    encoders: Vec<(EncoderRole, EncoderLoad)>,
    routines: bool,
}

/// What a server serves: a database's tools, agents, tokens and runs, or a registry of its own.
enum Tools {
    None,
    Database(Database),
    Registry(Arc<Registry>),
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("config", &self.config)
            .field("database", &matches!(self.tools, Tools::Database(_)))
            .field("instance", &self.instance)
            .field(
                "encoders",
                &self.encoders.iter().map(|(r, _)| *r).collect::<Vec<_>>(),
            )
            .field("routines", &self.routines)
            .finish()
    }
}

/// Why a server did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The state could not be built.
    #[error(transparent)]
    State(#[from] StateError),
    /// The stored tokens could not be read.
    #[error("reading the tokens")]
    Tokens(#[source] toolbelt_store::StoreError),
    /// The configuration exposes the server without authentication, or names a bad public URL.
    #[error(transparent)]
    Exposure(#[from] ConfigError),
    /// The address cannot be listened on.
    #[error("cannot listen on {addr}")]
    Listen {
        /// The configured address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The database cannot be followed (its pool cannot be widened).
    #[error("following the database")]
    Follow(#[source] toolbelt_store::StoreError),
}

impl ServerBuilder {
    /// Serves the tools, agents, tokens and runs of `db` (opened with
    /// [`crate::database::open`]), and runs its routines and stored MCP servers.
    pub fn database(mut self, db: Database) -> Self {
        self.tools = Tools::Database(db);
        self
    }

    /// Serves the tools of `registry` and the configured agents, without a database: runs
    /// stay in memory, tokens come from the configuration, and there are no stored tools,
    /// agents, routines or MCP servers. Without this nor [`ServerBuilder::database`], the
    /// server serves an empty registry.
    pub fn registry(mut self, registry: Arc<Registry>) -> Self {
        self.tools = Tools::Registry(registry);
        self
    }

    /// Whether this instance runs the database's due routines (default `true`); an instance
    /// that leaves them to others serves the routines API all the same.
    pub fn routines(mut self, run: bool) -> Self {
        self.routines = run;
        self
    }

    /// Names this instance in the routine claims it makes (default: the bound address and
    /// the process id).
    pub fn instance(mut self, instance: impl Into<String>) -> Self {
        self.instance = Some(instance.into());
        self
    }

    /// Loads an encoder for `role` with `load` once the server has started, and from then on
    /// routes with it too ([`toolbelt_host::Host::start_encoder`]); until then, and without
    /// any, by words. A role given twice keeps the first encoder that loads.
    pub fn encoder(mut self, role: EncoderRole, load: EncoderLoad) -> Self {
        self.encoders.push((role, load));
        self
    }

    /// Starts the server: builds the state over the database (or the registry), refuses an
    /// exposed address without tokens ([`ServerConfig::check_exposure`]), listens on the
    /// configured address (port 0 picks one: [`RunningServer::addr`]), reads the run log when
    /// learning is on, follows the database, and starts the routine loop, the stored MCP
    /// servers (both only with a database), loading the encoder when one was given, and
    /// serving.
    ///
    /// # Errors
    /// [`StartError`]: what failed, before anything is served.
    pub async fn start(self) -> Result<RunningServer, StartError> {
        let (state, db) = match self.tools {
            Tools::Database(db) => (AppState::with_database(&db, self.config)?, Some(db)),
            Tools::Registry(registry) => (AppState::new(registry, self.config)?, None),
            Tools::None => (AppState::new(Arc::new(Registry::new()), self.config)?, None),
        };
        let config = state.config();
        let has_tokens = state
            .tokens()
            .has_any_token()
            .await
            .map_err(StartError::Tokens)?;
        config.check_exposure(has_tokens)?;
        let listener = tokio::net::TcpListener::bind(config.addr)
            .await
            .map_err(|source| StartError::Listen {
                addr: config.addr,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| StartError::Listen {
            addr: config.addr,
            source,
        })?;
        // Read before serving, so the first request already routes with what past runs taught.
        crate::learning::start(&state).await;
        // Only now may the pool grow and does the registry follow the store (on Postgres, over
        // a LISTEN connection of its own): until ready, start-up used one connection.
        let watch = match db.as_ref().map(Database::watch).transpose() {
            Ok(watch) => watch,
            Err(e) => {
                // Learning may have started a task of the host: stop it before giving up.
                state.host().shutdown().await;
                return Err(StartError::Follow(e));
            }
        };
        if self.routines {
            let instance = self
                .instance
                .unwrap_or_else(|| format!("{addr}/{}", std::process::id()));
            // Routines run on this instance too; on Postgres several instances share the work.
            crate::routines::start(&state, instance);
        }
        // The MCP servers stored in the database: connected now, followed as they change,
        // stopped with the host.
        state.host().start_mcp_servers();
        for (role, load) in self.encoders {
            state.host().start_encoder(role, load);
        }
        let stop = CancellationToken::new();
        let signal = stop.clone();
        let serving = tokio::spawn(crate::serve(listener, state.clone(), async move {
            signal.cancelled().await;
        }));
        Ok(RunningServer {
            addr,
            state,
            stop,
            serving,
            watch,
        })
    }
}

/// A server that [`ServerBuilder::start`] started: it serves until
/// [`RunningServer::shutdown`] or [`RunningServer::run_until`].
pub struct RunningServer {
    addr: SocketAddr,
    state: AppState,
    stop: CancellationToken,
    serving: JoinHandle<std::io::Result<()>>,
    watch: Option<WatchHandle>,
}

impl std::fmt::Debug for RunningServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl RunningServer {
    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// What its handlers share.
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serves until `signal` resolves (or serving fails), then shuts down as
    /// [`RunningServer::shutdown`] does.
    ///
    /// # Errors
    /// As [`RunningServer::shutdown`].
    pub async fn run_until(mut self, signal: impl Future<Output = ()>) -> std::io::Result<()> {
        tokio::select! {
            () = signal => self.shutdown().await,
            // Serving ended by itself (an error): stop what is left.
            served = &mut self.serving => {
                self.stop.cancel();
                self.finish(joined(served)).await
            }
        }
    }

    /// Stops serving (requests in flight finish; SSE streams end with a `shutdown` event),
    /// then waits for the host's background tasks (routine loop, learning, the encoder, the
    /// stored MCP servers' supervision), and stops following the database.
    ///
    /// # Errors
    /// Serving's I/O error.
    pub async fn shutdown(mut self) -> std::io::Result<()> {
        self.stop.cancel();
        let served = joined((&mut self.serving).await);
        self.finish(served).await
    }

    async fn finish(self, served: std::io::Result<()>) -> std::io::Result<()> {
        // Serving cancelled the host's token when it began to shut down.
        self.state.host().shutdown().await;
        if let Some(watch) = self.watch {
            watch.stop().await;
        }
        served
    }

    /// Stops serving at once, as when the process dies: nothing is shut down, so its runs are
    /// neither ended nor recorded as interrupted (what another instance of the same database
    /// then sees). Background tasks are left to end with the runtime.
    pub fn abort(self) {
        self.serving.abort();
    }
}

/// Serving's result, a panic of its task as an I/O error.
fn joined(result: Result<std::io::Result<()>, tokio::task::JoinError>) -> std::io::Result<()> {
    result.unwrap_or_else(|e| Err(std::io::Error::other(e)))
}
