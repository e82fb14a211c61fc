#!/bin/sh
{
# docket's checked install (docs/distribution.md):
#
#   curl -fsSL https://github.com/docket-dev/docket/releases/latest/download/install.sh | sh
#   curl -fsSL …/install.sh | sh -s -- --version 0.1.0 --dir /usr/local/bin
#
# Picks this machine's binary, downloads it and SHA256SUMS, refuses it unless its SHA-256 is the
# one SHA256SUMS lists, and installs it as `docket` into ~/.local/bin (or --dir).
#
# Environment: DOCKET_DOWNLOAD_URL  the folder holding SHA256SUMS and the binaries (a mirror, or
#                                   a local release: http://127.0.0.1:8000); default: the release
#                                   page of --version
#              DOCKET_VERSION       the version to install (default: latest); --version wins
#              DOCKET_INSTALL_DIR   where to install (default: ~/.local/bin); --dir wins
#              DOCKET_DOWNLOAD_SECONDS  the longest the binary's download may take (default: 1800)
#
# A mirror that asks who you are: put its user and password in ~/.netrc (curl and wget read it),
# or in the address (printed without them); a query in the address (`?token=…`) follows each file.
# The whole script is this one { … } block, which ends on its last line, and it does its work in
# main, called just before that end. sh reads a block whole before it runs any of it: a download
# cut short (curl … | sh) is a syntax error that does nothing, never the first half of a script.

set -eu

RELEASES="https://github.com/docket-dev/docket/releases"

die() {
  printf 'docket install: %s\n' "$*" >&2
  exit 1
}

usage() {
  cat <<'EOF'
Usage: install.sh [--version VERSION] [--dir DIR] [--resolve]

  --version VERSION  install this release (0.1.0); default: the latest
  --dir DIR          install into DIR (default: ~/.local/bin)
  --resolve          print the version that would be installed, and install nothing

DOCKET_DOWNLOAD_URL names the folder to download from (default: the project's release page).
EOF
}

have() {
  command -v "$1" >/dev/null 2>&1
}

# Downloads the address $1 into the file $2, in $3 seconds at most and (where the tool can tell)
# $4 bytes at most. Every wait is bounded: a server that does not answer, or a download that
# stalls or is cut off, ends in a minute or two, not in wget's 20 silent tries; one that trickles
# just fast enough to go on ends at $3 (a 100 MB SHA256SUMS sent at 2 KiB/s ran for hours:
# distribution tester, session 49). On failure, download_error holds the tool's own last word on
# it (a status, "connection refused", "transfer closed with … bytes remaining").
download() { # url file seconds bytes
  download_error=""
  # The whole try bounded by `timeout` where the system has it (coreutils, BusyBox): wget has no
  # bound of its own on a download that goes on slowly. In the foreground where it can be (GNU's):
  # in a process group of its own, Ctrl-C reached only the script, which waited the bound out.
  within=""
  if timeout --foreground 1 true >/dev/null 2>&1; then within="timeout --foreground $3"
  elif have timeout; then within="timeout $3"; fi
  # What comes is cut one byte past the size it may have, as it comes (a server streaming on,
  # whatever it announced, wrote gigabytes first): the tool stops when nothing reads on. Its exit
  # status is kept in a file (set -e ends a failing pipeline's group; sh has no pipefail).
  : >"$tmp/download-rc"
  if [ "$downloader" = curl ]; then
    # 15 s to connect; a try slower than 1 KiB/s for 30 s ends; only what curl takes for
    # passing (a timeout, a 5xx) is tried again — twice under `timeout`, which bounds the tries
    # together; without it, one try (each gets the whole --max-time); -g: brackets and braces of
    # a query are no pattern; the user's ~/.netrc is read, for a mirror that asks who it is.
    retries=0
    if [ -n "$within" ]; then retries=2; fi
    { $within curl -gfsSL --netrc-optional --connect-timeout 15 --speed-limit 1024 --speed-time 30 --max-time "$3" --max-filesize "$4" --retry "$retries" -o - "$1" 2>"$tmp/download-error" && echo 0 >"$tmp/download-rc" || echo $? >"$tmp/download-rc"; } | head -c "$(($4 + 1))" >"$2"
  elif [ "$downloader" = busybox-wget ]; then
    # BusyBox's wget takes none of GNU wget's long options, and its -T (timeout) crashes in
    # Debian's 1.35: the plain download, quiet but for its errors.
    { $within wget -q -O - "$1" 2>"$tmp/download-error" && echo 0 >"$tmp/download-rc" || echo $? >"$tmp/download-rc"; } | head -c "$(($4 + 1))" >"$2"
  else
    # 30 s to resolve, to connect, and between any two reads; three tries in all.
    { $within wget --tries=3 --timeout=30 --progress=dot:mega -O - "$1" 2>"$tmp/download-error" && echo 0 >"$tmp/download-rc" || echo $? >"$tmp/download-rc"; } | head -c "$(($4 + 1))" >"$2"
  fi
  rc=$(cat "$tmp/download-rc")
  if [ "$(wc -c <"$2")" -gt "$4" ]; then echo "it is larger than $4 bytes" >"$tmp/download-error"; rc=1
  elif [ "$rc" = 0 ]; then return 0
  # 124: coreutils' timeout; 143: BusyBox's, which ends the tool with TERM.
  elif [ "$rc" = 124 ] || [ "$rc" = 143 ]; then echo "it took longer than $3 seconds" >"$tmp/download-error"; fi
  # The last line that says something, without wget's timestamp and speed, and without a user,
  # password or query of an address in it (GNU wget repeats one it cannot parse).
  download_error=$(awk 'NF { last = $0 } END { print last }' "$tmp/download-error" | sed 's/^[0-9][0-9-]* [0-9:]* //; s/^([^)]*) - //' | scrub)
  return 1
}

# Text with what looks like the user and password of an address (up to its last @ before a
# query), and anything after a `?`, left out.
scrub() {
  sed 's#\(://\)[^?# ]*@#\1…@#g; s#^[^?# ]*@#…@#; s#[?].*#?…#'
}

# " (what the download tool said)", or nothing when it said nothing.
# The address of the file $1 in the release folder: after its path, before a query the folder's
# address holds (a signed address, `?token=…`).
url_of() { # file
  case "$base" in
    *\?*)
      folder="${base%%\?*}"
      printf '%s/%s?%s' "${folder%/}" "$1" "${base#*\?}" ;;
    *) printf '%s/%s' "$base" "$1" ;;
  esac
}

# An address as it is printed: a user and password in it (up to its last @, with or without a
# scheme), and its query, left out.
shown() { # url
  printf '%s' "$1" | sed 's#^[[:space:]]*\([A-Za-z][A-Za-z0-9+.-]*://\)\{0,1\}[^?#]*@#\1…@#; s#?.*#?…#'
}

download_reason() {
  if [ -n "$download_error" ]; then printf ' (%s)' "$download_error"; fi
}

sha256() { # file → hex digest
  case "$sha256_tool" in
    sha256sum) sha256sum "$1" | awk '{ print $1 }' ;;
    shasum) shasum -a 256 "$1" | awk '{ print $1 }' ;;
    *) openssl dgst -sha256 -r "$1" | awk '{ print $1 }' ;;
  esac
}

# A folder named docket there would take the binary inside it (mv into a folder) and the install
# would look done: refused before anything is downloaded, and again before the binary is moved in.
refuse_folder() {
  if [ -d "$dir/$exe" ]; then
    die "$dir/$exe is a folder, so docket cannot be installed as $dir/$exe; nothing was installed. Move that folder away, or name another folder with --dir"
  fi
}

cleanup() {
  rm -rf "$tmp"
  if [ -n "$partial" ]; then rm -f "$partial"; fi
  # The folders this run made for an install that did not happen go again, innermost first, each
  # only while it is empty and inside the outermost one it made.
  if [ -n "$made" ]; then
    gone="$dir"
    while :; do
      case "$gone" in "$made" | "$made"/*) ;; *) break ;; esac
      rmdir -- "$gone" 2>/dev/null || break
      [ "$gone" != "$made" ] || break
      gone=$(dirname -- "$gone")
    done
  fi
}

# Quoted for a POSIX shell: in single quotes, each ' closed, escaped and reopened.
sh_quote() {
  printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}
# The command that appends the line $1 to the file $2 (as the user's shell reads it): echo, or
# printf when the line holds a backslash, which dash's and zsh's echo would take as an escape.
append_command() {
  case "$1" in
    *\\*) printf '%s %s >> %s' "printf '%s\\n'" "$(sh_quote "$1")" "$2" ;;
    *) printf 'echo %s >> %s' "$(sh_quote "$1")" "$2" ;;
  esac
}
# A path as a command line names it: as it is when it holds only safe characters, else quoted.
shell_word() {
  case "$1" in
    *[!A-Za-z0-9_./+@%=:,-]*) sh_quote "$1" ;;
    *) printf '%s' "$1" ;;
  esac
}
# Escaped for the inside of double quotes: \ " $ and ` each take a backslash.
dq_escape() {
  printf '%s' "$1" | sed 's/[\\"$`]/\\&/g'
}
# Quoted for fish: in single quotes, where only \ and ' take a backslash.
fish_quote() {
  printf "'%s'" "$(printf '%s' "$1" | sed "s/[\\\\']/\\\\&/g")"
}

# The file a new terminal's bash reads. On macOS, Terminal (and iTerm) open login shells, which
# read the first of ~/.bash_profile, ~/.bash_login and ~/.profile that exists and never
# ~/.bashrc; making a ~/.bash_profile where only ~/.profile is would hide that one, so an
# existing one is named. Elsewhere a terminal opens an interactive shell, which reads ~/.bashrc.
bash_rc_name() {
  if [ "$os" != darwin ]; then
    printf '.bashrc'
    return 0
  fi
  for candidate in .bash_profile .bash_login .profile; do
    if [ -n "${HOME:-}" ] && [ -f "$HOME/$candidate" ]; then
      printf '%s' "$candidate"
      return 0
    fi
  done
  printf '.bash_profile'
}

main() {
  version="${DOCKET_VERSION:-latest}"
  dir="${DOCKET_INSTALL_DIR:-}"
  dir_from=DOCKET_INSTALL_DIR
  resolve_only=0

  while [ $# -gt 0 ]; do
    case "$1" in
      --version) [ $# -ge 2 ] || die "--version needs a value, e.g. --version 0.1.0"; version="$2"; shift 2 ;;
      --version=*) version="${1#*=}"; shift ;;
      --dir) [ $# -ge 2 ] || die "--dir needs a folder, e.g. --dir ~/.local/bin"; dir="$2"; dir_given=1; dir_from=--dir; shift 2 ;;
      --dir=*) dir="${1#*=}"; dir_given=1; dir_from=--dir; shift ;;
      --resolve) resolve_only=1; shift ;;
      -h | --help) usage; exit 0 ;;
      *) usage >&2; die "unknown argument \"$1\"" ;;
    esac
  done

  # v0.1.0 is 0.1.0; a v before anything else is no version (vlatest is not latest).
  case "$version" in v[0-9]*) version="${version#v}" ;; esac
  case "$version" in
    latest) ;;
    "" | [!0-9]* | *[!0-9A-Za-z.+-]*) die "\"$version\" is not a version; give one like 0.1.0, or latest" ;;
  esac
  # An empty --dir is a mistake, not the default; a ~ the shell left as it is (--dir=~/bin, a YAML
  # env value) is the home folder, not a folder named ~ under the current one. --resolve installs
  # nothing, so no folder (DOCKET_INSTALL_DIR in a job's env) stops it.
  if [ "$resolve_only" = 1 ]; then
    dir=""
  else
    if [ -n "${dir_given:-}" ] && [ -z "$dir" ]; then die "--dir is empty; name the folder to install into, e.g. --dir ~/.local/bin"; fi
    # shellcheck disable=SC2088 # the literal ~ is what is looked for
    case "$dir" in
      "~" | "~/"*) [ -n "${HOME:-}" ] || die "HOME is not set, so $dir names no folder; give $dir_from as a full path"; dir="$HOME${dir#"~"}" ;;
      # Another user's home (~root/bin), or the shell's ~+ and ~-, is not looked up: a folder
      # named ~root here would be wrong.
      "~"*) die "$dir_from $dir begins with a ~ that install.sh does not expand (only ~ and ~/… are the home folder); give $dir_from as a full path" ;;
    esac
    if [ -z "$dir" ]; then
      [ -n "${HOME:-}" ] || die "HOME is not set; name the folder to install into with --dir"
      dir="$HOME/.local/bin"
    fi
  fi

  # --- which binary ------------------------------------------------------------------------------
  uname_s=$(uname -s 2>/dev/null || echo unknown)
  uname_m=$(uname -m 2>/dev/null || echo unknown)
  suffix=""
  case "$uname_s" in
    Linux) os=linux ;;
    Darwin) os=darwin ;;
    MINGW* | MSYS* | CYGWIN* | Windows_NT) os=windows; suffix=".exe" ;;
    *) die "docket has no binary for the operating system \"$uname_s\" (uname -s); it is released for Linux, macOS and Windows. See $RELEASES" ;;
  esac
  case "$uname_m" in
    x86_64 | amd64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) die "docket has no binary for the processor \"$uname_m\" (uname -m); it is released for x86_64 and arm64. See $RELEASES" ;;
  esac
  # An x64 shell on Apple silicon runs under Rosetta: the arm64 binary is the native one.
  if [ "$os" = darwin ] && [ "$arch" = x64 ] && [ "$(sysctl -n sysctl.proc_translated 2>/dev/null || echo 0)" = 1 ]; then
    arch=arm64
  fi
  target="$os-$arch"
  case "$target" in
    linux-x64 | linux-arm64 | darwin-x64 | darwin-arm64 | windows-x64 | windows-arm64) ;;
    *) die "docket has no binary for $target; it is released for linux-x64, linux-arm64, darwin-x64, darwin-arm64, windows-x64 and windows-arm64. See $RELEASES" ;;
  esac
  if [ "$os" = linux ] && { [ -f /etc/alpine-release ] || (ldd --version 2>&1 | grep -qi musl); }; then
    die "docket's Linux binaries need glibc, and this system uses musl (Alpine); use a glibc-based system or image (Debian, Ubuntu, Fedora…)"
  fi
  exe="docket$suffix"

  # --- where from --------------------------------------------------------------------------------
  if [ -n "${DOCKET_DOWNLOAD_URL:-}" ]; then
    # A fragment is the browser's, never sent; every trailing slash of the path goes (…/rel// →
    # …/rel), none of a query (…/?token=abc/ keeps its value).
    base="${DOCKET_DOWNLOAD_URL%%#*}"
    query=""
    case "$base" in *\?*) query="?${base#*\?}"; base="${base%%\?*}" ;; esac
    while [ "${base%/}" != "$base" ]; do base="${base%/}"; done
    base="$base$query"
  elif [ "$version" = latest ]; then
    base="$RELEASES/latest/download"
  else
    base="$RELEASES/download/v$version"
  fi

  seconds="${DOCKET_DOWNLOAD_SECONDS:-1800}"
  case "$seconds" in
    "" | *[!0-9]* | 0*) die "DOCKET_DOWNLOAD_SECONDS must be a whole number of seconds from 1 to 86400, like 1800; got \"$seconds\"" ;;
  esac
  # A day at most (curl refuses numbers past its own bound, after SHA256SUMS came).
  if [ ${#seconds} -gt 5 ] || [ "$seconds" -gt 86400 ]; then die "DOCKET_DOWNLOAD_SECONDS must be a whole number of seconds from 1 to 86400, like 1800; got \"$seconds\""; fi

  # --- what it needs, before any download --------------------------------------------------------
  if have curl; then downloader=curl
  elif have wget; then
    # BusyBox's wget (Alpine, slim images) says so in its help.
    if wget --help 2>&1 | grep -qi busybox; then downloader=busybox-wget; else downloader=wget; fi
  else die "neither curl nor wget is installed; install one and run this again"
  fi
  sha256_tool=""
  if [ "$resolve_only" = 0 ]; then
    for tool in sha256sum shasum openssl; do
      if have "$tool"; then sha256_tool=$tool; break; fi
    done
    [ -n "$sha256_tool" ] || die "no sha256sum, shasum or openssl to check the download with; install one (coreutils) and run this again"
  fi

  partial=""
  made=""
  # In TMPDIR, else in /tmp (a TMPDIR missing or read-only failed with mktemp's own words alone).
  tmp=$(mktemp -d 2>/dev/null || mktemp -d /tmp/docket.XXXXXX 2>/dev/null) || die "cannot make a temporary folder in ${TMPDIR:-/tmp} nor in /tmp; set TMPDIR to a folder you can write, e.g. TMPDIR=\$HOME/tmp"
  trap cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  # A reader gone (`| head -1`) or a terminal hung up: the download goes with it too.
  trap 'exit 129' HUP
  trap 'exit 141' PIPE

  if [ "$resolve_only" = 0 ]; then
    # The folder is made, and written to, before a download it could not take: the outermost
    # folder it lacked is noted, so that an install that does not happen leaves none behind.
    probe="$dir"
    while [ ! -e "$probe" ] && [ ! -L "$probe" ]; do
      made="$probe"
      parent=$(dirname -- "$probe")
      [ "$parent" != "$probe" ] || break
      probe="$parent"
    done
    mkdir -p "$dir" 2>/dev/null || die "cannot create $dir; name a folder you can write with --dir"
    # Absolute, without a trailing slash: what it says, and what it compares with PATH, is the
    # folder itself (a relative --dir on PATH would follow whatever folder a shell is in).
    dir=$(CDPATH='' cd -- "$dir" && pwd) || die "cannot enter $dir; name a folder you can use with --dir"
    if [ -n "$made" ]; then made=$(CDPATH='' cd -- "$made" && pwd); fi
    refuse_folder
    # The binary is copied in under a temporary name that the EXIT trap removes, whatever stops
    # the script; it keeps the .exe on Windows, which runs nothing without it.
    partial="$dir/.docket-partial-$$$suffix"
    touch "$partial" 2>/dev/null || die "cannot write into $dir (not yours, or read-only?); name a folder you can write with --dir"
  fi

  # A list of digests: a minute and 1 MiB at most (a release lists a dozen files).
  download "$(url_of SHA256SUMS)" "$tmp/SHA256SUMS" 60 1048576 || die "cannot download $(shown "$(url_of SHA256SUMS)")$(download_reason); check the version ($version) and the address (DOCKET_DOWNLOAD_URL), or see $RELEASES"

  # The line of this target: "<sha256>  docket-<version>-<target>[.exe]" (a "*" before the name is
  # sha256sum's binary mode). For latest, the highest version SHA256SUMS lists for it (a mirror
  # folder may list several releases), a pre-release (1.0.0-rc.1) below its release.
  if [ "$version" = latest ]; then
    line=$(awk -v tail="-$target$suffix" '
      # Numbers compared as numbers, digit by digit from the first that differs (no awk number:
      # 1e3 is no thousand, twenty digits lose nothing); a pre-release below its release, its
      # parts compared as semver does (1.0.0-rc.2 < 1.0.0-rc.10); build metadata (+…) ignored.
      function cmpnum(p, q) {
        # As strings ("" joined): awk would compare two numbers of twenty digits as equal doubles.
        p = p ""; q = q ""; sub(/^0+/, "", p); sub(/^0+/, "", q)
        if (length(p) != length(q)) return length(p) > length(q) ? 1 : -1
        return p == q ? 0 : (p > q ? 1 : -1)
      }
      function cmpids(a, b,   x, y, n, m, i, c, dx, dy) {
        n = split(a, x, "."); m = split(b, y, ".")
        for (i = 1; i <= n && i <= m; i++) {
          dx = x[i] ~ /^[0-9]+$/; dy = y[i] ~ /^[0-9]+$/
          if (dx && dy) { c = cmpnum(x[i], y[i]); if (c != 0) return c }
          else if (dx != dy) return dx ? -1 : 1
          else if (x[i] "" != y[i] "") return x[i] "" > y[i] "" ? 1 : -1
        }
        return n == m ? 0 : (n > m ? 1 : -1)
      }
      function newer(a, b,   ca, cb, pa, pb, c) {
        sub(/[+].*/, "", a); sub(/[+].*/, "", b)
        ca = a; pa = ""; if (index(a, "-")) { ca = substr(a, 1, index(a, "-") - 1); pa = substr(a, index(a, "-") + 1) }
        cb = b; pb = ""; if (index(b, "-")) { cb = substr(b, 1, index(b, "-") - 1); pb = substr(b, index(b, "-") + 1) }
        c = cmpids(ca, cb); if (c != 0) return c > 0
        if ((pa == "") != (pb == "")) return pa == ""
        return cmpids(pa, pb) > 0
      }
      { sub(/\r$/, ""); f = $2; sub(/^\*/, "", f)
        if (f ~ /^docket-/ && length(f) > length(tail) + 7 && substr(f, length(f) - length(tail) + 1) == tail) {
          v = substr(f, 8, length(f) - length(tail) - 7)
          # Only a version: digits and dots first, then a pre-release and a build of semver characters.
          if (v !~ /^[0-9]+([.][0-9]+)*(-[0-9A-Za-z.-]+)?([+][0-9A-Za-z.-]+)?$/) next
          if (best == "" || newer(v, best)) { best = v; line = $1 " " f }
        } }
      END { if (line != "") print line }' "$tmp/SHA256SUMS")
  else
    line=$(awk -v want="docket-$version-$target$suffix" '{ sub(/\r$/, ""); f = $2; sub(/^\*/, "", f); if (f == want) { print $1, f; exit } }' "$tmp/SHA256SUMS")
  fi
  [ -n "$line" ] || die "$(shown "$(url_of SHA256SUMS)") lists no docket binary for $target (version $version); see $RELEASES for what was released"
  expected=$(printf '%s' "${line%% *}" | tr 'A-F' 'a-f')
  name="${line#* }"
  case "$expected" in
    *[!0-9a-f]*) die "$(shown "$(url_of SHA256SUMS)") is malformed: \"$expected\" is not a SHA-256 digest" ;;
  esac
  [ ${#expected} -eq 64 ] || die "$(shown "$(url_of SHA256SUMS)") is malformed: \"$expected\" is not a SHA-256 digest"
  found="${name#docket-}"
  found="${found%-"$target$suffix"}"
  # What a mirror's SHA256SUMS named: a version (a digit first), never `..` to put in a path.
  case "$found" in
    [0-9]*) ;;
    *) die "$(shown "$(url_of SHA256SUMS)") names \"$found\" as a version of docket, which is none; see $RELEASES" ;;
  esac

  if [ "$resolve_only" = 1 ]; then
    printf '%s\n' "$found"
    exit 0
  fi

  # --- download and check ------------------------------------------------------------------------
  printf 'Downloading docket %s for %s from %s\n' "$found" "$target" "$(shown "$base")"
  # Half an hour at most (123 MB at 70 KB/s), and no more than a binary can be.
  download "$(url_of "$name")" "$tmp/$name" "$seconds" 1073741824 || die "cannot download $(shown "$(url_of "$name")")$(download_reason)"
  actual=$(sha256 "$tmp/$name")
  if [ "$actual" != "$expected" ]; then
    die "checksum mismatch for $name: SHA256SUMS says $expected, the download is $actual. Nothing was installed: the download is damaged or was tampered with. Try again; if it happens again, report it at $RELEASES"
  fi

  # --- install -----------------------------------------------------------------------------------
  cp "$tmp/$name" "$partial" 2>/dev/null || die "cannot write into $dir (full, or not yours?); name a folder you can write with --dir"
  chmod 755 "$partial"
  # Run it before it replaces anything: a binary that cannot start (a noexec folder, too old a
  # glibc) leaves the previous docket in place.
  # From / : a folder deleted under the shell is no reason to refuse the binary.
  ran=$(cd / && "$partial" --version 2>&1) || die "the downloaded docket does not run here: $ran"
  refuse_folder
  mv -f "$partial" "$dir/$exe" || die "cannot replace $dir/$exe"
  partial=""
  made=""
  printf 'Installed %s: %s\n' "$dir/$exe" "$ran"

  # On PATH: an entry naming the folder, however written (a trailing slash, a doubled one) or
  # reached (through a symbolic link, either way). A docket found in an entry before it is the one
  # that `docket` runs.
  physical=$(CDPATH='' cd -- "$dir" && pwd -P)
  on_path=0
  shadow=""
  rest="${PATH:-}:"
  while [ -n "$rest" ]; do
    entry="${rest%%:*}"
    rest="${rest#*:}"
    # A relative entry (or an empty one, the current folder) follows whatever folder a shell is in.
    case "$entry" in /*) ;; *) continue ;; esac
    while [ "${entry#*//}" != "$entry" ]; do entry="${entry%%//*}/${entry#*//}"; done
    [ "$entry" != / ] && entry="${entry%/}"
    if [ "$entry" = "$dir" ] || { [ -d "$entry" ] && [ "$(CDPATH='' cd -- "$entry" 2>/dev/null && pwd -P)" = "$physical" ]; }; then
      on_path=1
      break
    fi
    if [ -z "$shadow" ] && [ -f "$entry/$exe" ] && [ -x "$entry/$exe" ]; then shadow="$entry/$exe"; fi
  done

  if [ "$on_path" = 1 ]; then
    if [ -n "$shadow" ]; then
      printf '\ndocket by name still runs %s, which comes first on PATH (before %s). Remove that docket, or put %s before its folder on PATH; until then run %s.\n' "$shadow" "$dir" "$dir" "$dir/$exe"
    fi
  elif [ "${GITHUB_ACTIONS:-}" = true ] && [ -n "${GITHUB_PATH:-}" ]; then
    # A GitHub Actions step: later steps take PATH from $GITHUB_PATH, never from an rc file.
    printf '\n%s is not on PATH. For later steps to run docket by name, add it:\n' "$dir"
    # shellcheck disable=SC2016 # $GITHUB_PATH is for the step's shell to expand, not this one.
    printf '  %s\n' "$(append_command "$dir" '"$GITHUB_PATH"')"
    printf 'Until then: %s --help\n' "$(shell_word "$dir/$exe")"
    if [ -n "$shadow" ]; then printf 'Until then, docket by name runs %s, not this one.\n' "$shadow"; fi
  else
    # SHELL may be unset (a CI job, cron, a container): set -u would stop on a bare ${SHELL}.
    login_shell="${SHELL:-}"
    login_shell="${login_shell##*/}"
    case "$login_shell" in
      zsh) rc_name=.zshrc ;;
      bash) rc_name=$(bash_rc_name) ;;
      *) rc_name=.profile ;;
    esac
    # The rc file as the advised line names it: a HOME holding a space or a quote is quoted, or the
    # line would append to a file named by its first word; without HOME, ~ for the user's shell.
    case "${HOME:-}" in
      '') rc="${HOME:-~}/$rc_name" ;;
      *[!A-Za-z0-9_./+@%=:,-]*) rc="$(shell_word "$HOME/$rc_name")" ;;
      *) rc="$HOME/$rc_name" ;;
    esac
    printf '\n%s is not on your PATH. To run docket by name, add it:\n' "$dir"
    if [ "$login_shell" = fish ]; then
      printf '  fish_add_path %s\n' "$(fish_quote "$dir")"
    else
      # shellcheck disable=SC2016 # $PATH is for the user's shell to expand, not this one.
      printf '  %s\n' "$(append_command "export PATH=\"$(dq_escape "$dir"):"'$PATH"' "$rc")"
    fi
    printf 'then open a new terminal. Until then: %s --help\n' "$(shell_word "$dir/$exe")"
    if [ -n "$shadow" ]; then printf 'Until then, docket by name runs %s, not this one.\n' "$shadow"; fi
  fi
}

main "$@"
}
