//! [`Snapshot`]: an immutable state of the registry that readers share.

use std::collections::HashMap;
use std::sync::Arc;

use fixedbitset::FixedBitSet;

use crate::name::ToolName;
use crate::tool::ToolHandle;

pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// One consistent state of a registry: the tools, a name index and a tag index.
///
/// Tools live in slots addressed by a dense id; the tag index holds one bitset
/// of ids per tag, so selecting groups is a few word-wise ORs rather than a
/// scan of every tool.
#[derive(Clone, Default)]
pub struct Snapshot {
    pub(crate) slots: Vec<Option<ToolHandle>>,
    pub(crate) by_name: FastMap<ToolName, u32>,
    pub(crate) by_tag: FastMap<Arc<str>, FixedBitSet>,
    pub(crate) free: Vec<u32>,
    pub(crate) generation: u64,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("tools", &self.by_name.len())
            .field("tags", &self.by_tag.len())
            .field("generation", &self.generation)
            .finish()
    }
}

impl Snapshot {
    pub(crate) fn from_tools(tools: impl IntoIterator<Item = ToolHandle>) -> Self {
        let mut snap = Self::default();
        for tool in tools {
            // Later duplicates replace earlier ones; toolsets built by hand are small.
            if let Some(id) = snap.by_name.get(tool.name().as_str()).copied() {
                snap.remove_id(id);
            }
            snap.insert(tool);
        }
        snap
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether there are no tools.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// Increases with every published change.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub(crate) fn id_of(&self, name: &str) -> Option<u32> {
        self.by_name.get(name).copied()
    }

    pub(crate) fn tool(&self, id: u32) -> Option<&ToolHandle> {
        self.slots.get(id as usize).and_then(Option::as_ref)
    }

    pub(crate) fn get(&self, name: &str) -> Option<&ToolHandle> {
        self.id_of(name).and_then(|id| self.tool(id))
    }

    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// A bitset with every live tool set.
    pub(crate) fn all_ids(&self) -> FixedBitSet {
        let mut set = FixedBitSet::with_capacity(self.capacity());
        for (i, slot) in self.slots.iter().enumerate() {
            if slot.is_some() {
                set.insert(i);
            }
        }
        set
    }

    pub(crate) fn insert(&mut self, tool: ToolHandle) -> u32 {
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                let id = u32::try_from(self.slots.len()).unwrap_or(u32::MAX);
                self.slots.push(None);
                id
            }
        };
        for tag in &tool.spec().tags {
            let bits = self.by_tag.entry(Arc::from(tag.as_str())).or_default();
            bits.grow(id as usize + 1);
            bits.insert(id as usize);
        }
        self.by_name.insert(tool.name().clone(), id);
        self.slots[id as usize] = Some(tool);
        id
    }

    pub(crate) fn remove_id(&mut self, id: u32) -> Option<ToolHandle> {
        let tool = self.slots.get_mut(id as usize)?.take()?;
        self.by_name.remove(tool.name().as_str());
        for tag in &tool.spec().tags {
            if let Some(bits) = self.by_tag.get_mut(tag.as_str()) {
                bits.set(id as usize, false);
                if bits.is_clear() {
                    self.by_tag.remove(tag.as_str());
                }
            }
        }
        self.free.push(id);
        Some(tool)
    }

    /// Tag names with the number of tools carrying each, sorted by name.
    pub fn tags(&self) -> Vec<(String, usize)> {
        let mut tags: Vec<_> = self
            .by_tag
            .iter()
            .map(|(t, bits)| (t.to_string(), bits.count_ones(..)))
            .collect();
        tags.sort();
        tags
    }

    pub(crate) fn tag_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.by_tag.keys().map(|t| t.to_string()).collect();
        names.sort();
        names
    }
}
