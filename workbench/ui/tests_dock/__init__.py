"""The Tests dock (`panel`) and the dev loop that makes it: Format, clippy, tests after a save."""
