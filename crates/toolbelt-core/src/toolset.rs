//! [`Toolset`]: a view of some tools of a registry snapshot.

use std::fmt;
use std::sync::Arc;

use fixedbitset::FixedBitSet;

use crate::error::{SelectionError, ToolError};
use crate::selection::{Selection, Target};
use crate::snapshot::Snapshot;
use crate::spec::ToolSpec;
use crate::suggest::nearest;
use crate::tool::ToolHandle;

/// A set of tools an agent may use: a snapshot plus a membership bitset.
///
/// A toolset is fixed once made: registering or removing tools later does not
/// change it, so a run sees one consistent set from start to end. Cloning is
/// an `Arc` clone plus a small bitset copy.
#[derive(Clone)]
pub struct Toolset {
    snapshot: Arc<Snapshot>,
    members: FixedBitSet,
}

impl fmt::Debug for Toolset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.iter().map(|t| t.name().as_str()))
            .finish()
    }
}

impl Default for Toolset {
    fn default() -> Self {
        Self::empty()
    }
}

impl Toolset {
    /// A toolset with no tools.
    pub fn empty() -> Self {
        Self {
            snapshot: Arc::new(Snapshot::default()),
            members: FixedBitSet::new(),
        }
    }

    /// A toolset of exactly these tools; a later tool with a repeated name replaces the earlier.
    pub fn from_tools(tools: impl IntoIterator<Item = ToolHandle>) -> Self {
        let snapshot = Snapshot::from_tools(tools);
        let members = snapshot.all_ids();
        Self {
            snapshot: Arc::new(snapshot),
            members,
        }
    }

    pub(crate) fn all(snapshot: Arc<Snapshot>) -> Self {
        let members = snapshot.all_ids();
        Self { snapshot, members }
    }

    /// Resolves a selection against `snapshot`.
    pub(crate) fn select(
        snapshot: Arc<Snapshot>,
        selection: &Selection,
    ) -> Result<Self, SelectionError> {
        let cap = snapshot.capacity();
        let mut include = FixedBitSet::with_capacity(cap);
        let mut exclude = FixedBitSet::with_capacity(cap);
        let mut any_include = false;
        for item in &selection.items {
            let target = if item.exclude {
                &mut exclude
            } else {
                &mut include
            };
            any_include |= !item.exclude;
            match &item.target {
                Target::All => target.insert_range(..),
                Target::Group(group) => match snapshot.by_tag.get(group.as_str()) {
                    Some(bits) => target.union_with(bits),
                    None => {
                        return Err(SelectionError::UnknownGroup {
                            nearest: nearest(group, snapshot.by_tag.keys().map(|k| &**k)),
                            known_groups: snapshot.tag_names(),
                            name: group.clone(),
                        });
                    }
                },
                Target::Tool(tool) => match snapshot.id_of(tool) {
                    Some(id) => target.insert(id as usize),
                    None => {
                        return Err(SelectionError::UnknownTool {
                            nearest: nearest(tool, snapshot.by_name.keys().map(|k| k.as_str())),
                            name: tool.clone(),
                        });
                    }
                },
                Target::Either(name) => {
                    if let Some(bits) = snapshot.by_tag.get(name.as_str()) {
                        target.union_with(bits);
                    } else if let Some(id) = snapshot.id_of(name) {
                        target.insert(id as usize);
                    } else {
                        let candidates = snapshot
                            .by_tag
                            .keys()
                            .map(|k| &**k)
                            .chain(snapshot.by_name.keys().map(|k| k.as_str()));
                        return Err(SelectionError::Unknown {
                            nearest: nearest(name, candidates),
                            known_groups: snapshot.tag_names(),
                            name: name.clone(),
                        });
                    }
                }
            }
        }
        if !any_include && !selection.is_empty() {
            include = snapshot.all_ids();
        }
        include.difference_with(&exclude);
        // `insert_range(..)` may have set free slots; keep live tools only.
        if selection.items.iter().any(|i| i.target == Target::All) {
            include.intersect_with(&snapshot.all_ids());
        }
        Ok(Self {
            snapshot,
            members: include,
        })
    }

    /// Whether `other` is the same view of the same registry snapshot (the same tools,
    /// unchanged): a cheap test for caches keyed by a toolset.
    pub fn same_view(&self, other: &Toolset) -> bool {
        Arc::ptr_eq(&self.snapshot, &other.snapshot) && self.members == other.members
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.members.count_ones(..)
    }

    /// Whether the toolset is empty.
    pub fn is_empty(&self) -> bool {
        self.members.is_clear()
    }

    /// The tool named `name`, if it is in this toolset.
    pub fn get(&self, name: &str) -> Option<&ToolHandle> {
        let id = self.snapshot.id_of(name)?;
        if self.members.contains(id as usize) {
            self.snapshot.tool(id)
        } else {
            None
        }
    }

    /// The tool named `name`, or an error listing the nearest names in this toolset.
    ///
    /// # Errors
    /// [`ToolError::UnknownTool`] when the tool is absent.
    pub fn require(&self, name: &str) -> Result<&ToolHandle, ToolError> {
        self.get(name).ok_or_else(|| ToolError::UnknownTool {
            name: name.to_owned(),
            nearest: nearest(name, self.iter().map(|t| t.name().as_str())),
        })
    }

    /// Whether `name` is in this toolset.
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// The tools, in registration-slot order.
    pub fn iter(&self) -> impl Iterator<Item = &ToolHandle> + '_ {
        self.members
            .ones()
            .filter_map(|id| self.snapshot.tool(id as u32))
    }

    /// The specs, in the same order as [`Toolset::iter`].
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> + '_ {
        self.iter().map(ToolHandle::spec)
    }

    /// The names, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.iter().map(|t| t.name().to_string()).collect();
        names.sort();
        names
    }

    /// The tools of this toolset that carry `tag`.
    pub fn with_tag(&self, tag: &str) -> Self {
        let mut members = self.snapshot.by_tag.get(tag).cloned().unwrap_or_default();
        members.grow(self.members.len());
        members.intersect_with(&self.members);
        Self {
            snapshot: Arc::clone(&self.snapshot),
            members,
        }
    }

    /// The tools whose spec satisfies `keep`.
    pub fn filter(&self, mut keep: impl FnMut(&ToolSpec) -> bool) -> Self {
        let mut members = self.members.clone();
        for id in self.members.ones() {
            if let Some(tool) = self.snapshot.tool(id as u32)
                && !keep(tool.spec())
            {
                members.set(id, false);
            }
        }
        Self {
            snapshot: Arc::clone(&self.snapshot),
            members,
        }
    }

    /// The tools of this toolset named in `names`; unknown names are ignored.
    pub fn subset<S: AsRef<str>>(&self, names: impl IntoIterator<Item = S>) -> Self {
        let mut members = FixedBitSet::with_capacity(self.members.len());
        for name in names {
            if let Some(id) = self.snapshot.id_of(name.as_ref())
                && self.members.contains(id as usize)
            {
                members.insert(id as usize);
            }
        }
        Self {
            snapshot: Arc::clone(&self.snapshot),
            members,
        }
    }

    /// This toolset plus `tools`; a tool of the same name as one here replaces it.
    #[must_use]
    pub fn with_tools(&self, tools: impl IntoIterator<Item = ToolHandle>) -> Self {
        Self::from_tools(self.iter().cloned().chain(tools))
    }

    /// Tags of the tools in this toolset, with counts, sorted by name.
    pub fn tags(&self) -> Vec<(String, usize)> {
        let mut tags: Vec<(String, usize)> = self
            .snapshot
            .by_tag
            .iter()
            .filter_map(|(tag, bits)| {
                let n = bits.intersection(&self.members).count();
                (n > 0).then(|| (tag.to_string(), n))
            })
            .collect();
        tags.sort();
        tags
    }
}
