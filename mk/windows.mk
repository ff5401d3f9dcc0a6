# The Windows build: every crate and target type-checked for x86_64-pc-windows-gnu, so Unix-only code
# cannot land without its Windows counterpart. Nothing is linked or run: that needs Windows itself.
# Set-up, once: the target's standard library (rustup) and MinGW's C compiler (rusqlite's bundled SQLite,
# Tauri's resource file).

WINDOWS_TARGET := x86_64-pc-windows-gnu
SYSTEM_PACKAGES += gcc-mingw-w64-x86-64
TEST_SUITES += check-windows

.PHONY: windows-target check-windows

# Asked of rustup every time rather than stamped: a new toolchain comes without the target.
windows-target:
	@rustup target list --installed | grep -qx '$(WINDOWS_TARGET)' || rustup target add $(WINDOWS_TARGET)

check-windows: windows-target | deps
	cargo check --workspace --all-targets --locked --target $(WINDOWS_TARGET)
