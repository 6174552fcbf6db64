"""Before a run (or a hot reload): when the reference backend needs a device the user unchecked,
ask first (non-modal) and run only when they agree to check that device
(`workbench.run.labels.reference_device_notice` says when and what)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QWidget


def confirm_reference_device(window: QWidget, bridge: Any, picker: Any, proceed: Callable[[], Any],
                             say: Callable[[str], None]) -> bool:  # fmt: skip
    """Run `proceed` now (True), or ask in `window` and run it once the device is checked (False;
    `say` tells why not when the user cancels). `picker` (the Devices panel) shows it checked."""
    from workbench.run.labels import reference_device_notice

    notice = reference_device_notice(bridge.expected_reference(), bridge.devices(), bridge.devices_info)
    if notice is None:
        proceed()
        return True
    if window.findChild(QMessageBox, "referenceDeviceQuestion") is not None:
        return False  # already asking
    box = QMessageBox(QMessageBox.Icon.Question, "The reference needs an unchecked device",
                      notice["message"] + f"\n\nCheck {notice['label']} and run, or cancel?", parent=window)  # fmt: skip
    box.setObjectName("referenceDeviceQuestion")
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    check = box.addButton(f"Check {notice['label']} and run", QMessageBox.ButtonRole.AcceptRole)
    box.addButton(QMessageBox.StandardButton.Cancel)

    def answered(_result: int) -> None:
        box.setObjectName("")  # a later run may ask again
        if box.clickedButton() is not check:
            say(f"not run: the reference {notice['reference']} needs {notice['label']}")
            return
        bridge.set_devices([*bridge.devices(), notice["spec"]])
        if hasattr(picker, "populate") and bridge.devices_info:
            picker.populate(bridge.devices_info)  # shows the device checked
        proceed()

    box.finished.connect(answered)
    box.open()
    return False
