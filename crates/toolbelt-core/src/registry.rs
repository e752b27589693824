//! [`Registry`]: every tool stored once, indexed by name and by tag.

use std::sync::{Arc, Mutex, PoisonError};

use arc_swap::ArcSwap;
use tokio::sync::watch;

use crate::error::{RegistryError, SelectionError, SpecError};
use crate::selection::Selection;
use crate::snapshot::Snapshot;
use crate::suggest::nearest;
use crate::tool::{IntoToolHandle, Registration, ToolHandle, ToolModule};
use crate::toolset::Toolset;

/// The one place tools are stored, read without locks.
///
/// Readers load the current [`Snapshot`] (an atomic pointer load) and never
/// block; writers serialise among themselves, copy the snapshot, change the
/// copy and publish it, so a reader sees either the state before a write or
/// after it, never half of one. Lookups by name are one hash probe; selecting
/// groups ORs per-tag bitsets.
///
/// ```
/// use toolbelt_core::{FnTool, Registry};
///
/// let registry = Registry::new();
/// registry.add_tool(FnTool::builder("ping").description("Answer pong").tag("net")
///     .handler(|_args, _ctx| async { "pong" }).unwrap()).unwrap();
/// let view = registry.select("net").unwrap();
/// assert_eq!(view.names(), ["ping"]);
/// ```
pub struct Registry {
    current: ArcSwap<Snapshot>,
    write: Mutex<()>,
    changes: watch::Sender<u64>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Registry")
            .field(&*self.current.load())
            .finish()
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self {
            current: ArcSwap::from_pointee(Snapshot::default()),
            write: Mutex::new(()),
            changes: watch::Sender::new(0),
        }
    }

    /// A registry holding every `#[tool]` linked into this binary.
    ///
    /// Tools are collected at link time, across crates, with no hand-written
    /// list. A crate whose tools you want must be linked: if nothing else of it
    /// is used, add `use that_crate as _;`.
    ///
    /// # Errors
    /// [`RegistryError::Duplicate`] when two discovered tools share a name, or
    /// the spec error of an invalid one (with where it was defined).
    pub fn discovered() -> Result<Self, RegistryError> {
        let registry = Self::new();
        registry.add_tools(discovered_tools()?)?;
        Ok(registry)
    }

    /// The current snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.current.load().len()
    }

    /// Whether the registry is empty.
    pub fn is_empty(&self) -> bool {
        self.current.load().is_empty()
    }

    /// The tool named `name`.
    pub fn get(&self, name: &str) -> Option<ToolHandle> {
        self.current.load().get(name).cloned()
    }

    /// Whether a tool named `name` exists.
    pub fn contains(&self, name: &str) -> bool {
        self.current.load().id_of(name).is_some()
    }

    /// Every tool, sorted by name.
    pub fn list(&self) -> Vec<ToolHandle> {
        let snap = self.current.load();
        let mut tools: Vec<ToolHandle> = snap.slots.iter().flatten().cloned().collect();
        tools.sort_by(|a, b| a.name().cmp(b.name()));
        tools
    }

    /// The tools carrying `tag`, sorted by name (`tools_by_tag`).
    pub fn tools_by_tag(&self, tag: &str) -> Vec<ToolHandle> {
        let snap = self.current.load();
        let mut tools: Vec<ToolHandle> = snap
            .by_tag
            .get(tag)
            .map(|bits| {
                bits.ones()
                    .filter_map(|id| snap.tool(id as u32))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        tools.sort_by(|a, b| a.name().cmp(b.name()));
        tools
    }

    /// Every tag with the number of tools carrying it, sorted by name.
    pub fn tags(&self) -> Vec<(String, usize)> {
        self.current.load().tags()
    }

    /// A toolset of every tool.
    pub fn all(&self) -> Toolset {
        Toolset::all(self.snapshot())
    }

    /// Resolves a selection such as `"file,shell,-shell_exec"`; see [`Selection`].
    ///
    /// # Errors
    /// [`SelectionError`] naming the unknown group or tool, the nearest names
    /// and the known groups, or the malformed item.
    pub fn select(&self, expr: &str) -> Result<Toolset, SelectionError> {
        let selection = Selection::parse(expr)?;
        Toolset::select(self.snapshot(), &selection)
    }

    /// Resolves an already parsed selection.
    ///
    /// # Errors
    /// As [`Registry::select`].
    pub fn resolve(&self, selection: &Selection) -> Result<Toolset, SelectionError> {
        Toolset::select(self.snapshot(), selection)
    }

    /// Adds one tool.
    ///
    /// # Errors
    /// [`RegistryError::Duplicate`] if the name is taken; [`RegistryError::Spec`]
    /// if the tool's spec is invalid. The registry is unchanged on error.
    pub fn add_tool(&self, tool: impl IntoToolHandle) -> Result<(), RegistryError> {
        self.add_tools([tool.into_tool_handle()?])
    }

    /// Adds several tools at once: all of them or, on error, none.
    ///
    /// # Errors
    /// As [`Registry::add_tool`], for the first offending tool.
    pub fn add_tools<T: IntoToolHandle>(
        &self,
        tools: impl IntoIterator<Item = T>,
    ) -> Result<(), RegistryError> {
        let tools = tools
            .into_iter()
            .map(IntoToolHandle::into_tool_handle)
            .collect::<Result<Vec<_>, SpecError>>()?;
        self.write(|next| {
            for tool in tools {
                if let Some(existing) = next.get(tool.name().as_str()) {
                    return Err(RegistryError::Duplicate {
                        name: tool.name().to_string(),
                        existing_version: existing.spec().version.clone(),
                    });
                }
                next.insert(tool);
            }
            Ok(())
        })
    }

    /// Adds every tool of a module (`add_tool_module`).
    ///
    /// # Errors
    /// As [`Registry::add_tools`].
    pub fn add_module(&self, module: &impl ToolModule) -> Result<(), RegistryError> {
        self.add_tools(module.tools()?)
    }

    /// Adds `tool`, replacing any tool of the same name (a new version); returns the old one.
    ///
    /// # Errors
    /// [`RegistryError::Spec`] if the tool's spec is invalid.
    pub fn replace(&self, tool: impl IntoToolHandle) -> Result<Option<ToolHandle>, RegistryError> {
        let tool = tool.into_tool_handle()?;
        self.write(|next| {
            let old = next
                .id_of(tool.name().as_str())
                .and_then(|id| next.remove_id(id));
            next.insert(tool);
            Ok(old)
        })
    }

    /// Removes the tool named `name` and returns it.
    ///
    /// # Errors
    /// [`RegistryError::NotFound`] with the nearest names.
    pub fn remove(&self, name: &str) -> Result<ToolHandle, RegistryError> {
        let mut removed = self.remove_tools([name])?;
        removed.pop().ok_or_else(|| RegistryError::NotFound {
            name: name.to_owned(),
            nearest: Vec::new(),
        })
    }

    /// Removes several tools at once: all of them or, if one is missing, none.
    ///
    /// # Errors
    /// [`RegistryError::NotFound`] for the first missing name.
    pub fn remove_tools<S: AsRef<str>>(
        &self,
        names: impl IntoIterator<Item = S>,
    ) -> Result<Vec<ToolHandle>, RegistryError> {
        let names: Vec<S> = names.into_iter().collect();
        self.write(|next| {
            let mut removed = Vec::with_capacity(names.len());
            for name in &names {
                let name = name.as_ref();
                let tool = next
                    .id_of(name)
                    .and_then(|id| next.remove_id(id))
                    .ok_or_else(|| RegistryError::NotFound {
                        name: name.to_owned(),
                        nearest: nearest(name, next.by_name.keys().map(|k| k.as_str())),
                    })?;
                removed.push(tool);
            }
            Ok(removed)
        })
    }

    /// A receiver that sees the snapshot generation after every change.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn write<R>(
        &self,
        change: impl FnOnce(&mut Snapshot) -> Result<R, RegistryError>,
    ) -> Result<R, RegistryError> {
        // Writers are serialised so that none loses another's change; the guard
        // protects no data of its own, so a poisoned lock is safe to reuse.
        let _guard = self.write.lock().unwrap_or_else(PoisonError::into_inner);
        let mut next = Snapshot::clone(&self.current.load());
        let out = change(&mut next)?;
        next.generation += 1;
        let generation = next.generation;
        self.current.store(Arc::new(next));
        self.changes.send_replace(generation);
        Ok(out)
    }
}

/// Every tool registered with `#[tool]` in this binary, built and validated.
///
/// # Errors
/// The spec error of the first invalid tool, with the place it was defined.
pub fn discovered_tools() -> Result<Vec<ToolHandle>, RegistryError> {
    inventory::iter::<Registration>
        .into_iter()
        .map(|reg| {
            (reg.make)().map_err(|e| match e {
                SpecError::InvalidSchema {
                    tool,
                    pointer,
                    reason,
                } => SpecError::InvalidSchema {
                    tool: format!("{tool} (defined at {})", reg.location),
                    pointer,
                    reason,
                },
                other => other,
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(RegistryError::from)
}

#[cfg(test)]
mod tests;
