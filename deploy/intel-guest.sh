#!/usr/bin/env bash
# A guest machine whose processor says "GenuineIntel", for Intel MPI's own autotuner (issue 35, "Against Intel's
# own tuner"): Intel MPI 2021.13 runs its autotuner only when the cpuid vendor is GenuineIntel (scheduler/README.md,
# "Intel's own tuner"), and this machine is an AMD EPYC.
#   deploy/intel-guest.sh build                       packages, kernel and initramfs into $STATE/intel-guest
#   deploy/intel-guest.sh run [--share DIR] -- CMD..  boot, run CMD (bash -c) in this machine's file tree, power off;
#                                                     prints CMD's output, exits with its status
# The guest sees this machine's root read-only (9p), with its own /tmp, /dev/shm, /run and HOME (/tmp/home) in memory; each
# DIR is a writable exception, shared with this machine at the same path (not /tmp itself: Intel MPI's launcher
# keeps sockets there, which 9p cannot hold).  CMD starts in the current directory (/ if the guest has none).
# It runs the same programs, libraries and venv as the host; only the processor differs.
#
# Why emulated (QEMU TCG, model Skylake-Client) and not KVM: /dev/kvm opens here and a VM is created, but a
# nested guest hangs in the kernel's decompressor whatever the CPU model (host, qemu64; this machine is itself
# a Firecracker VM), measured 2026-11-26.  So every instruction is translated, and a collective takes 10-25x its
# time on the host (IMB Allreduce 8 B: 0.43 us on the host, 8.9 us in the guest).  Figures from the guest are
# figures of the guest: both tuners and the user program must run in it, and they are labelled so.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
state=${PGMPI_STATE_DIR:-$here/../.state}/intel-guest
CPU_MODEL=${PGMPI_GUEST_CPU:-Skylake-Client}    # any QEMU model whose vendor is GenuineIntel
MEM=${PGMPI_GUEST_MEM:-4G}
SMP=${PGMPI_GUEST_SMP:-2}
MODULES=(virtio virtio_ring virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci netfs fscache 9pnet
         9pnet_virtio 9p)

die() { echo "intel-guest.sh: $*" >&2; exit 1; }

build() {
  local pkgs=() p
  for p in qemu-system-x86 busybox-static cpio; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || pkgs+=("$p")
  done
  if [ ${#pkgs[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${pkgs[@]}" >/dev/null \
      || die "cannot install ${pkgs[*]} from Debian"
  fi
  mkdir -p "$state"
  [ -s "$state/initrd.gz" ] && [ -s "$state/vmlinuz" ] && return 0
  # Debian's generic kernel: the cloud flavour has no 9p
  local kpkg
  kpkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
  [ -n "$kpkg" ] || die "Debian offers no linux-image-amd64 here"
  rm -rf "$state/kernel" "$state/ird"; mkdir -p "$state/kernel" "$state/ird"/{bin,mod,proc,sys,dev,host,share}
  (cd "$state/kernel" && apt-get download "$kpkg" >/dev/null 2>&1) || die "cannot download $kpkg"
  dpkg-deb -x "$state"/kernel/"$kpkg"_*.deb "$state/kernel/x"
  local kdir m f
  kdir=$(echo "$state"/kernel/x/lib/modules/*/kernel)
  for m in "${MODULES[@]}"; do
    f=$(find "$kdir" -name "$m.ko" -o -name "$m.ko.xz" | head -n 1)
    [ -n "$f" ] || die "$kpkg has no module $m"
    case $f in *.xz) xz -dc "$f" > "$state/ird/mod/$m.ko" ;; *) cp "$f" "$state/ird/mod/$m.ko" ;; esac
  done
  cp /bin/busybox "$state/ird/bin/busybox"
  cat > "$state/ird/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs dev /dev
# insmod has no dependency resolution: three passes settle the order
for pass in 1 2 3; do for m in $(ls /mod); do m=${m%.ko}
  grep -q "^$m " /proc/modules || insmod /mod/$m.ko 2>/dev/null; done; done
opts=trans=virtio,version=9p2000.L,msize=262144
mount -t 9p -o $opts,ro hostroot /host && mount -t 9p -o $opts share /share || { echo "guest: 9p mounts failed"; poweroff -f; }
H=/host
for d in proc sys dev; do mount --bind /$d $H/$d; done
for d in tmp run dev/shm; do mount -t tmpfs tmpfs $H/$d; done
. /share/guest.env                      # SHARES (writable paths), CWD
for s in $SHARES; do mkdir -p $H$s 2>/dev/null; mount --bind /share/mnt$s $H$s; done
hostname intel-guest; ip link set lo up
mkdir -p $H/tmp/.guest && mount --bind /share $H/tmp/.guest
chroot $H /bin/bash -c 'cd "$0" 2>/dev/null || cd /; mkdir -p /tmp/home; export HOME=/tmp/home PGMPI_GUEST=1 && exec /bin/bash /tmp/.guest/cmd.sh' "$CWD" \
  > /share/out.txt 2>&1
echo $? > /share/rc
sync; poweroff -f
EOF
  chmod +x "$state/ird/init"
  (cd "$state/ird" && find . | cpio -o -H newc --quiet | gzip -1 > "$state/initrd.gz.tmp")
  mv "$state/initrd.gz.tmp" "$state/initrd.gz"
  cp "$state"/kernel/x/boot/vmlinuz-* "$state/vmlinuz"
  rm -rf "$state/kernel" "$state/ird"
  echo "intel-guest.sh: built ($kpkg, QEMU $(qemu-system-x86_64 --version | head -n 1 | awk '{print $4}'))"
}

run() {
  local shares=()
  while [ $# -gt 0 ]; do
    case $1 in
      --share) shares+=("$(realpath -m "$2")"); shift 2 ;;
      --) shift; break ;;
      *) break ;;
    esac
  done
  [ $# -gt 0 ] || die "usage: $0 run [--share DIR]... -- CMD..."
  [ -s "$state/initrd.gz" ] || build
  local s
  box=$(mktemp -d "${TMPDIR:-/tmp}/intel-guest.XXXXXX")
  trap 'rm -rf "$box"' EXIT
  for s in "${shares[@]}"; do
    case $s in /|/tmp|/dev|/dev/*|/proc|/proc/*|/sys|/sys/*|/run) die "--share $s: the guest needs its own $s" ;; esac
    mkdir -p "$s"
  done
  # one 9p export per writable directory, mounted by the init at /share/mnt<path> and bound to <path>
  local args=() i=0
  printf 'SHARES="%s"\nCWD=%q\n' "$(printf '%s ' "${shares[@]}")" "$PWD" > "$box/guest.env"
  printf '%q ' "$@" > "$box/cmd.sh"; echo >> "$box/cmd.sh"
  for s in "${shares[@]}"; do
    i=$((i + 1))
    args+=(-virtfs "local,path=$s,mount_tag=s$i,security_model=none,multidevs=remap")
  done
  : > "$box/mounts.sh"
  i=0
  for s in "${shares[@]}"; do
    i=$((i + 1)); echo "mkdir -p /share/mnt$s && mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 s$i /share/mnt$s" >> "$box/mounts.sh"
  done
  sed -i '1i . /share/mounts.sh' "$box/guest.env"
  local t0=$SECONDS
  qemu-system-x86_64 -accel tcg,thread=multi -cpu "$CPU_MODEL" -m "$MEM" -smp "$SMP" \
    -kernel "$state/vmlinuz" -initrd "$state/initrd.gz" -append "console=ttyS0 quiet panic=-1" \
    -nographic -no-reboot -monitor none \
    -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
    -virtfs "local,path=$box,mount_tag=share,security_model=none,multidevs=remap" "${args[@]}" \
    > "$box/console.log" 2>&1 < /dev/null || true
  [ -f "$box/rc" ] || { tail -n 20 "$box/console.log" >&2; die "the guest stopped before the command ended"; }
  cat "$box/out.txt"
  echo "intel-guest.sh: $(( SECONDS - t0 )) s in the guest ($CPU_MODEL, $SMP vCPUs, emulated)" >&2
  return "$(cat "$box/rc")"
}

case ${1:-} in
  build) build ;;
  run) shift; run "$@" ;;
  *) echo "usage: $0 build | run [--share DIR]... -- CMD..." >&2; exit 2 ;;
esac
