//! What the encoders' weights caches share: a fingerprint of the model file a cache was made
//! from, and writing a cache through a temporary file renamed into place.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

/// A fingerprint of a model file (its length and modification time): a cache made from other
/// weights is not used.
pub(crate) fn fingerprint(weights: &Path) -> Option<u64> {
    let meta = std::fs::metadata(weights).ok()?;
    let modified = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_nanos();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in meta
        .len()
        .to_le_bytes()
        .iter()
        .chain(&(modified as u64).to_le_bytes())
    {
        h = (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
    }
    Some(h)
}

/// Writes `path` by `write` into a temporary file beside it, synced and renamed into place,
/// so a reader sees the whole cache or none; the temporary file is removed on failure.
pub(crate) fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let written = (|| {
        let mut out = BufWriter::new(File::create(&tmp)?);
        write(&mut out)?;
        out.into_inner()
            .map_err(std::io::IntoInnerError::into_error)?
            .sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}
