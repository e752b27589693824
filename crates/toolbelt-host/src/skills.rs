//! Stored skills as the runtime's [`Skill`]s.

use toolbelt_router::{Skill, SkillError, SkillSet};
use toolbelt_store::{SkillSpec, Stored};

/// The runtime's skill for a stored one.
///
/// # Errors
/// [`SkillError`] when the stored name or description breaks the runtime's rules.
pub fn skill_of(record: Stored<SkillSpec>) -> Result<Skill, SkillError> {
    let spec = record.into_value();
    let mut skill = Skill::from_parts(spec.name, spec.description, spec.instructions)?;
    skill.metadata = spec.metadata;
    skill.files = spec.files.into_iter().map(Into::into).collect();
    Ok(skill)
}

/// The stored skills `records`, indexed. A skill that cannot be read is logged and left out:
/// runs go on without it, as they do when the database cannot be read.
pub(crate) fn skill_set(records: Vec<Stored<SkillSpec>>) -> SkillSet {
    let skills = records
        .into_iter()
        .filter_map(|record| {
            let name = record.name.clone();
            skill_of(record)
                .map_err(|error| tracing::warn!(skill = %name, %error, "stored skill left out"))
                .ok()
        })
        .collect();
    SkillSet::new(skills)
}
