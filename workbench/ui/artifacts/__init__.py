"""The Artifacts dock: generated code beside the Rust source (`view`) and its IR panes."""
