"""The code editor: tabs of Rust files with highlighting, diagnostics, find/replace and go-to-line."""

from workbench.ui.editor.code_editor import CodeEditor
from workbench.ui.editor.editor_tabs import EditorTabs
from workbench.ui.editor.highlighter import RustHighlighter

__all__ = ["CodeEditor", "EditorTabs", "RustHighlighter"]
