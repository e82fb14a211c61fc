# docket's checked install for Windows (docs/distribution.md):
#
#   irm https://github.com/docket-dev/docket/releases/latest/download/install.ps1 | iex
#   & ([scriptblock]::Create((irm .../install.ps1))) -Version 0.1.0 -Dir C:\tools
#
# Downloads the windows-x64 (or windows-arm64) binary and SHA256SUMS, refuses the binary unless its SHA-256 is the one
# SHA256SUMS lists, and installs it as docket.exe into %LOCALAPPDATA%\docket\bin (or -Dir).
#
# Environment: DOCKET_DOWNLOAD_URL (the folder holding SHA256SUMS and the binaries; default: the
# release page), DOCKET_VERSION (default: latest), DOCKET_INSTALL_DIR. Parameters win.
param(
  [string]$Version = $(if ($env:DOCKET_VERSION) { $env:DOCKET_VERSION } else { "latest" }),
  [string]$Dir = $(if ($env:DOCKET_INSTALL_DIR) { $env:DOCKET_INSTALL_DIR } else { Join-Path $env:LOCALAPPDATA "docket\bin" }),
  [switch]$Resolve
)

$ErrorActionPreference = "Stop"
$ProgressPreference = "SilentlyContinue"  # the progress bar slows Invoke-WebRequest down tenfold
$Releases = "https://github.com/docket-dev/docket/releases"

function Fail([string]$Message) {
  Write-Host "docket install: $Message" -ForegroundColor Red
  # exit would close the window of `irm | iex`; throw ends the script with the message.
  throw "docket install: $Message"
}

# Quoted for PowerShell's single quotes, in the advice it prints: each quote doubled, the typographic
# ones too (PowerShell takes U+2018 to U+201B for ' as well), so C:\Users\O'Brien\bin stays one
# string. The file stays ASCII: Windows PowerShell 5.1 reads a .ps1 without a BOM as ANSI.
function SingleQuoted([string]$Text) {
  "'" + ($Text -replace "['\u2018\u2019\u201A\u201B]", '$0$0') + "'"
}

$Version = $Version.TrimStart("v")
if ($Version -notmatch '^[0-9A-Za-z.+-]+$') { Fail "`"$Version`" is not a version; give one like 0.1.0, or latest" }
if (-not $Resolve) {
  # Absolute, as PowerShell itself resolves it (from its current location; ~ is the home folder):
  # what it says, what it compares with Path and what the advice names is the folder itself (a
  # relative -Dir on Path would follow whatever folder a shell is in).
  if (-not $Dir) { Fail "-Dir is empty; name the folder to install into, e.g. -Dir C:\tools" }
  try {
    $Dir = $ExecutionContext.SessionState.Path.GetUnresolvedProviderPathFromPSPath($Dir)
  } catch {
    Fail "cannot tell which folder -Dir $Dir names ($($_.Exception.Message)); give it as a full path, e.g. -Dir C:\tools"
  }
  # Without a trailing \, but for a drive's root (C:\; C: alone is that drive's current folder).
  $trimmed = $Dir.TrimEnd('\', '/')
  if ($trimmed -and $trimmed -notmatch '^[A-Za-z]:$') { $Dir = $trimmed }
}

# --- which binary --------------------------------------------------------------------------------
$isWindowsOs = [System.Environment]::OSVersion.Platform -eq "Win32NT"
if (-not $isWindowsOs) { Fail "install.ps1 installs the Windows binary; on Linux and macOS use install.sh (curl -fsSL $Releases/latest/download/install.sh | sh)" }
$arch = $env:PROCESSOR_ARCHITEW6432
if (-not $arch) { $arch = $env:PROCESSOR_ARCHITECTURE }
switch ($arch) {
  "AMD64" { $target = "windows-x64" }
  "ARM64" { $target = "windows-arm64" }
  default { Fail "docket has no binary for the processor `"$arch`"; it is released for windows-x64 and windows-arm64. See $Releases" }
}

# --- where from ----------------------------------------------------------------------------------
if ($env:DOCKET_DOWNLOAD_URL) { $base = $env:DOCKET_DOWNLOAD_URL.TrimEnd("/") }
elseif ($Version -eq "latest") { $base = "$Releases/latest/download" }
else { $base = "$Releases/download/v$Version" }

$partial = $null
$tmp = Join-Path ([System.IO.Path]::GetTempPath()) ("docket-" + [System.Guid]::NewGuid().ToString("N"))
New-Item -ItemType Directory -Path $tmp | Out-Null
try {
  try {
    Invoke-WebRequest -UseBasicParsing -Uri "$base/SHA256SUMS" -OutFile (Join-Path $tmp "SHA256SUMS")
  } catch {
    Fail "cannot download $base/SHA256SUMS ($($_.Exception.Message)); check the version ($Version) and the address (DOCKET_DOWNLOAD_URL), or see $Releases"
  }

  # The line of this target: "<sha256>  docket-<version>-windows-x64.exe" ("*" before the name is binary mode).
  $line = $null
  foreach ($text in Get-Content (Join-Path $tmp "SHA256SUMS")) {
    $parts = $text.Trim() -split '\s+', 2
    if ($parts.Count -ne 2) { continue }
    $file = $parts[1].TrimStart("*")
    if ($Version -eq "latest") { $match = $file -like "docket-*-$target.exe" } else { $match = $file -eq "docket-$Version-$target.exe" }
    if ($match) { $line = @($parts[0].ToLowerInvariant(), $file); break }
  }
  if (-not $line) { Fail "$base/SHA256SUMS lists no docket binary for $target (version $Version); see $Releases for what was released" }
  $expected, $name = $line
  if ($expected -notmatch '^[0-9a-f]{64}$') { Fail "$base/SHA256SUMS is malformed: `"$expected`" is not a SHA-256 digest" }
  $found = $name.Substring("docket-".Length, $name.Length - "docket-".Length - "-$target.exe".Length)

  if ($Resolve) { Write-Output $found; return }

  # --- download and check ------------------------------------------------------------------------
  Write-Host "Downloading docket $found for $target from $base"
  $download = Join-Path $tmp $name
  try {
    Invoke-WebRequest -UseBasicParsing -Uri "$base/$name" -OutFile $download
  } catch {
    Fail "cannot download $base/$name ($($_.Exception.Message))"
  }
  $actual = (Get-FileHash -Algorithm SHA256 -Path $download).Hash.ToLowerInvariant()
  if ($actual -ne $expected) {
    Fail "checksum mismatch for ${name}: SHA256SUMS says $expected, the download is $actual. Nothing was installed: the download is damaged or was tampered with. Try again; if it happens again, report it at $Releases"
  }

  # --- install -------------------------------------------------------------------------------------
  try { New-Item -ItemType Directory -Force -Path $Dir | Out-Null } catch { Fail "cannot create $Dir; name a folder you can write with -Dir" }
  # Still an .exe: PowerShell runs a file by its extension, and would open anything else instead.
  # -LiteralPath: a [ or ] in a folder's name is no wildcard.
  $partial = Join-Path $Dir ".docket-partial-$PID.exe"
  try { Copy-Item -Force -LiteralPath $download -Destination $partial } catch { Fail "cannot write into $Dir ($($_.Exception.Message)); name a folder you can write with -Dir" }
  # Run it before it replaces anything: a binary that cannot start leaves the previous docket in place.
  # A file that is no program for this machine throws, and so, under Stop, does any line a native
  # command writes to stderr with 2>&1 in Windows PowerShell 5.1: each ends in "does not run here",
  # with what it said, not in PowerShell's own error.
  $ran = ""
  $code = $null
  $stop = $ErrorActionPreference
  try {
    $ErrorActionPreference = "Continue"
    $ran = ((& $partial --version 2>&1 | ForEach-Object { "$_" }) -join " ").Trim()
    $code = $LASTEXITCODE
  } catch {
    $ran = $_.Exception.Message
  } finally {
    $ErrorActionPreference = $stop
  }
  if ($code -ne 0) { Fail "the downloaded docket does not run here: $ran" }
  $exe = Join-Path $Dir "docket.exe"
  try { Move-Item -Force -LiteralPath $partial -Destination $exe } catch { Fail "cannot replace $exe ($($_.Exception.Message)); is docket running? Stop it and run this again" }
  $partial = $null
  Write-Host "Installed ${exe}: $ran"

  $userPath = [Environment]::GetEnvironmentVariable("Path", "User")
  $onPath = ($env:Path -split ';') + ($userPath -split ';') | Where-Object { $_ -and ($_.TrimEnd('\') -ieq $Dir.TrimEnd('\')) }
  if (-not $onPath) {
    Write-Host ""
    Write-Host "$Dir is not on your PATH. To run docket by name, add it for your user:"
    Write-Host "  [Environment]::SetEnvironmentVariable('Path', [Environment]::GetEnvironmentVariable('Path', 'User') + $(SingleQuoted ";$Dir"), 'User')"
    Write-Host "then open a new terminal. Until then: & $(SingleQuoted $exe) --help"
  }
} finally {
  Remove-Item -Recurse -Force -ErrorAction SilentlyContinue $tmp
  # A copy that never became docket.exe (a failed check, a stop halfway) is not left behind.
  if ($partial) { Remove-Item -Force -ErrorAction SilentlyContinue -LiteralPath $partial }
}
