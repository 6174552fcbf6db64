"""The window's colours, in one place: the application palette, the code views' palette and syntax
colours (editor and artifacts alike), the plots' colours and the colours that mark a state
(good, bad, warning, muted). Panels read them from here, never from one another.

One dark theme: the editor, the artifacts' code and pyqtgraph's plots are dark, so the rest of the
window is too (a light code view in a dark window was issue 22's complaint).
"""

from __future__ import annotations

from pygments.token import Comment, Keyword, Name, Number, Operator, String
from PySide6.QtGui import QColor, QPalette

# ------------------------------------------------------------------ the application
WINDOW = "#2b2d30"
TEXT = "#d7dae0"
BASE = "#1e1f22"  # the background of text, tables and code
SELECTION = "#2f65ca"
SELECTED_TEXT = "#ffffff"
DISABLED_TEXT = "#6b6f75"
LINK = "#61afef"

_APP_ROLES = {
    QPalette.ColorRole.Window: WINDOW,
    QPalette.ColorRole.WindowText: TEXT,
    QPalette.ColorRole.Base: BASE,
    QPalette.ColorRole.AlternateBase: "#26282b",
    QPalette.ColorRole.ToolTipBase: "#3c3f41",
    QPalette.ColorRole.ToolTipText: "#e6e6e6",
    QPalette.ColorRole.PlaceholderText: "#7f848e",
    QPalette.ColorRole.Text: TEXT,
    QPalette.ColorRole.Button: "#33363a",
    QPalette.ColorRole.ButtonText: TEXT,
    QPalette.ColorRole.BrightText: "#ff6b6b",
    QPalette.ColorRole.Link: LINK,
    QPalette.ColorRole.Highlight: SELECTION,
    QPalette.ColorRole.HighlightedText: SELECTED_TEXT,
    QPalette.ColorRole.Mid: "#3c3f41",
    QPalette.ColorRole.Dark: "#1b1c1e",
    QPalette.ColorRole.Shadow: "#111111",
    QPalette.ColorRole.Light: "#45484c",
}

APP_STYLE_SHEET = (
    "QDockWidget::title { padding: 4px 6px; background: #313438; }"
    "QTabBar::tab { padding: 4px 12px; }"
    "QToolBar { spacing: 4px; border: none; }"
    "QStatusBar QLabel { padding: 0 6px; }"
)

#: The bar above the editor that asks something of the user (trust, a file changed on disk).
NOTICE_BAR = ("#5c4a14", "#f3e6b3")  # background, text


def app_palette() -> QPalette:
    """The application's dark palette (Fusion style)."""
    palette = QPalette()
    for role, color in _APP_ROLES.items():
        palette.setColor(role, QColor(color))
    for role in (QPalette.ColorRole.WindowText, QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText):
        palette.setColor(QPalette.ColorGroup.Disabled, role, QColor(DISABLED_TEXT))
    return palette


# ------------------------------------------------------------------ states
GOOD = "#2e8b3d"
BAD = "#c62828"
WARN = "#b26a00"
MUTED = "#808080"
ERROR = "#ff5c57"  # a refused value's frame, an error's marker
BUSY = "#1f6fd1"  # a build in progress
FAILED_MARK = "#d62728"  # a failed configuration's cross in the tuning plot
# The plots' marks (ui/plot_model/marks.py says when): a failed check's ring and label, a stale result's
# text and the opacity it is drawn at.
CHECK_FAILED = "#ff5252"
STALE_TEXT = "#8a8f98"
STALE_ALPHA = 90
#: A comparison's verdict (the sessions panel).
VERDICT = {"faster": "#4caf50", "slower": "#ef5350", "not comparable": "#9e9e9e"}

# ------------------------------------------------------------------ code (editor, artifacts, console)
CODE_BACKGROUND = BASE
CODE_TEXT = TEXT
#: Lines that belong together across two views (a Rust line and the PTX / SPIR-V made from it).
LINKED_LINE = "#4a4126"
#: The Debug dock's marks in the editor: a breakpoint's dot, the stopped line's arrow and background.
DEBUG_BREAKPOINT = "#e06c75"
DEBUG_LINE = "#e5c07b"
DEBUG_LINE_BACKGROUND = "#3b4a2a"
BRACKET_MATCH, BRACKET_MISMATCH = "#3e4f5f", "#7a2a2a"
FIND_MATCH, FIND_NOTHING = "#5a4b1e", "#5a2222"
SEVERITY = {"error": ERROR, "warning": "#e5c07b", "note": LINK, "help": LINK}

#: Syntax colours (One Dark-like) by pygments token type; sub-types inherit from their parents.
#: (colour, italic). Rust, PTX, WGSL, CUDA C++ and SPIR-V are all coloured from this one table.
SYNTAX = {
    Keyword: ("#c678dd", False),
    Keyword.Type: ("#e5c07b", False),
    Keyword.Pseudo: ("#c678dd", False),
    Name.Builtin: ("#e5c07b", False),
    Name.Builtin.Pseudo: ("#e06c75", False),
    Name.Function: ("#61afef", False),
    Name.Function.Magic: ("#56b6c2", False),  # macros
    Name.Attribute: ("#d19a66", False),  # lifetimes
    Name.Class: ("#e5c07b", False),
    Name.Namespace: ("#e5c07b", False),
    Name.Label: ("#e06c75", False),  # PTX labels
    Name.Variable: ("#e06c75", False),  # PTX registers
    String: ("#98c379", False),
    String.Doc: ("#7f9f7f", False),
    Number: ("#d19a66", False),
    Comment: ("#7f848e", True),
    Comment.Preproc: ("#b3a167", False),  # attributes #[...]
    Operator: ("#abb2bf", False),
}


#: The console's text area and prompts (qtconsole's style sheet), in the same colours.
CONSOLE_STYLE = f"""
QPlainTextEdit, QTextEdit {{ background-color: {BASE}; background-clip: padding; color: {TEXT};
                            selection-background-color: {SELECTION}; }}
.inverted {{ background-color: {TEXT}; color: {BASE}; }}
.error {{ color: #ff6b6b; }}
.in-prompt-number {{ font-weight: bold; }}
.out-prompt-number {{ font-weight: bold; }}
.in-prompt, .in-prompt-number {{ color: #98c379; }}
.out-prompt, .out-prompt-number {{ color: #e06c75; }}
"""


def code_palette(palette: QPalette) -> QPalette:
    """`palette` with the code views' colours: dark even when the application's palette is light."""
    for role, color in (
        (QPalette.ColorRole.Base, CODE_BACKGROUND),
        (QPalette.ColorRole.Text, CODE_TEXT),
        (QPalette.ColorRole.Window, WINDOW),
        (QPalette.ColorRole.Highlight, SELECTION),
        (QPalette.ColorRole.HighlightedText, SELECTED_TEXT),
    ):
        palette.setColor(role, QColor(color))
    return palette


# ------------------------------------------------------------------ plots
PLOT_BACKGROUND, PLOT_TEXT, PLOT_AXIS = BASE, TEXT, "#6b6f78"
#: One colour per series, in the order series are first seen (plots, sessions, tuning).
SERIES = (
    "#4e9fe0",
    "#ff9f43",
    "#5cc96b",
    "#ef5350",
    "#b388ff",
    "#c49a6c",
    "#f48fb1",
    "#b0b0b0",
    "#d4e157",
    "#26c6da",
)

# The Counters view: a row whose backends differ, and its text.
COUNTERS_DIFFER = "#5c4a1e"
COUNTERS_DIFFER_TEXT = "#ffffff"
