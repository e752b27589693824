#![doc = include_str!("../README.md")]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod tools;

pub use tools::{
    TestkitAddTool, TestkitEchoTool, TestkitGreetTool, testkit_add, testkit_echo, testkit_greet,
};
