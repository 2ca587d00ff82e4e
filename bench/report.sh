#!/usr/bin/env bash
# The report: medians of the samples, the targets (PASS/FAIL), softverbs
# against its closest reference, the references themselves, scale and idle,
# failures, and the machine.  Sourced by run.sh (needs lib.sh).
#
#   bench_medians            samples.tsv -> medians.tsv
#                            (KEY UNIT MEDIAN N_OK N_ALL MIN MAX FIRST_FAILURE)
#   bench_report OUT.md      writes the markdown section of this run
# Sourced: its variables are used by the other scripts.
# shellcheck disable=SC2034

declare -A MED=() UNITOF=() NOK=() NALL=() WHY=() LO=() HI=()

bench_medians() {
  # mawk has no asort: a small insertion sort per key.
  awk -F'\t' '
    { k = $1; unit[k] = $2; all[k]++
      if (!(k in order)) { order[k] = ++nk; keys[nk] = k }
      if ($3 == "ok") { n = ++nok[k]; v[k, n] = $4 + 0 }
      else if (!(k in why)) why[k] = $4 }
    END {
      for (i = 1; i <= nk; i++) {
        k = keys[i]; n = nok[k] + 0
        for (a = 2; a <= n; a++) {
          x = v[k, a]; b = a - 1
          while (b >= 1 && v[k, b] > x) { v[k, b + 1] = v[k, b]; b-- }
          v[k, b + 1] = x
        }
        if (n == 0) m = ""
        else if (n % 2) m = v[k, (n + 1) / 2]
        else m = (v[k, n / 2] + v[k, n / 2 + 1]) / 2
        # "-" for an empty field: tab is whitespace to read, and would collapse.
        lo = n ? v[k, 1] : "-"; hi = n ? v[k, n] : "-"
        if (m == "") m = "-"
        w = (k in why) ? why[k] : "-"
        printf "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", k, unit[k], m, n, all[k], lo, hi, w
      }
    }' "$BENCH_SAMPLES" | sort >"$BENCH_WORK/medians.tsv"
  local k u m n a lo hi w
  while IFS=$'\t' read -r k u m n a lo hi w; do
    [[ $m == - ]] && m=""
    [[ $w == - ]] && w=""
    MED[$k]=$m UNITOF[$k]=$u NOK[$k]=$n NALL[$k]=$a WHY[$k]=$w LO[$k]=$lo HI[$k]=$hi
  done <"$BENCH_WORK/medians.tsv"
}

# Numbers for people: 3 significant digits or so.
fmt_num() {
  awk -v x="$1" 'BEGIN {
    a = x < 0 ? -x : x
    if (x == int(x)) printf "%d", x; else if (a >= 100) printf "%.0f", x; else if (a >= 10) printf "%.1f", x
    else if (a >= 1) printf "%.2f", x; else printf "%.3f", x }'
}

fmt_size() {
  case $1 in
    1048576) echo "1 MiB" ;;
    65536) echo "64 KiB" ;;
    4096) echo "4 KiB" ;;
    *) if (($1 >= 1048576 && $1 % 1048576 == 0)); then echo "$(($1 / 1048576)) MiB"
       elif (($1 >= 1024 && $1 % 1024 == 0)); then echo "$(($1 / 1024)) KiB"
       else echo "$1 B"; fi ;;
  esac
}

has_val() { [[ -n ${MED[$1]:-} ]]; }

# A value with its unit, or why there is none.
show_val() {  # KEY [FACTOR]
  local k=$1 f=${2:-1}
  if has_val "$k"; then
    local u=${UNITOF[$k]}
    [[ $u == count ]] && u=""
    echo "$(fmt_num "$(awk -v a="${MED[$k]}" -v f="$f" 'BEGIN { print a * f }')")${u:+ $u}"
  elif [[ -n ${NALL[$k]:-} ]]; then
    echo "FAILED"
  else
    echo "n/a"
  fi
}

# "ok/all", and the range of the ok values when there are several.
runs_of() {  # KEY
  local k=$1
  if [[ -z ${NALL[$k]:-} ]]; then echo "0/0"; return; fi
  if ((${NOK[$k]} > 1)); then
    echo "${NOK[$k]}/${NALL[$k]} ($(fmt_num "${LO[$k]}")–$(fmt_num "${HI[$k]}"))"
  else
    echo "${NOK[$k]}/${NALL[$k]}"
  fi
}

ratio_of() {  # SVKEY REFKEY [REF_FACTOR] -> sv / (ref * factor)
  has_val "$1" && has_val "$2" || return 1
  awk -v a="${MED[$1]}" -v b="${MED[$2]}" -v f="${3:-1}" 'BEGIN { if (b * f > 0) printf "%.2f", a / (b * f); else exit 1 }'
}

# Is KEY noisy: its runs spread by more than 1.5x (max / min)?
noisy() {  # KEY
  [[ -n ${MED[$1]:-} && ${NOK[$1]:-0} -gt 1 ]] || return 1
  awk -v lo="${LO[$1]}" -v hi="${HI[$1]}" 'BEGIN { exit !(lo > 0 && hi / lo > 1.5) }'
}

# A warning for a target whose inputs are noisy.
noise_note() {  # KEY...
  local k out=""
  for k in "$@"; do
    [[ -n $k ]] && noisy "$k" && out+="${out:+, }${k%%/*} $(fmt_num "${LO[$k]}")–$(fmt_num "${HI[$k]}")"
  done
  [[ -n $out ]] && echo " (noisy: $out)"
}

# One row of the targets table.
#   target LABEL SVKEY REFKEY REFLABEL OP GOAL [REF_FACTOR [PAIRKEY]]
#     ratio = sv / ref; OP le: ratio <= GOAL passes, ge: ratio >= GOAL;
#     with PAIRKEY (its samples: sv / ref of runs taken one right after
#     the other, perftest.sh), the median of those instead
#   target LABEL SVKEY "" "" OP GOAL: an absolute goal on sv itself
TARGETS_PASS=0 TARGETS_FAIL=0 TARGETS_NA=0
target() {
  local label=$1 sv=$2 ref=$3 rlabel=$4 op=$5 goal=$6 f=${7:-1} pair=${8:-} r res x cmp
  cmp=$([[ $op == le ]] && echo "≤" || echo "≥")
  if [[ -z $ref ]]; then
    if has_val "$sv"; then
      x=${MED[$sv]}
      if awk -v x="$x" -v g="$goal" -v op="$op" 'BEGIN { exit !(op == "le" ? x <= g : x >= g) }'; then
        res="**PASS**"; TARGETS_PASS=$((TARGETS_PASS + 1))
      else
        res="**FAIL**"; TARGETS_FAIL=$((TARGETS_FAIL + 1))
      fi
    else
      res="N/A (no value)"; TARGETS_NA=$((TARGETS_NA + 1))
    fi
    echo "| $label | $(show_val "$sv") | — | — | $cmp $goal ${UNITOF[$sv]:-} | $res$(noise_note "$sv") |"
    return
  fi
  local how=""
  if [[ -n $pair ]] && has_val "$pair" && has_val "$sv"; then
    r=$(awk -v a="${MED[$pair]}" 'BEGIN { printf "%.2f", a }')
    how=" (median of ${NOK[$pair]} paired runs: $(fmt_num "${LO[$pair]}")–$(fmt_num "${HI[$pair]}"))"
  fi
  if [[ -n $how ]] || r=$(ratio_of "$sv" "$ref" "$f"); then
    if awk -v x="$r" -v g="$goal" -v op="$op" 'BEGIN { exit !(op == "le" ? x <= g : x >= g) }'; then
      res="**PASS**"; TARGETS_PASS=$((TARGETS_PASS + 1))
    else
      res="**FAIL**"; TARGETS_FAIL=$((TARGETS_FAIL + 1))
    fi
    r="${r}x$how"
  else
    r="—"
    if ! has_val "$sv"; then res="N/A (softverbs: no value)"; else res="N/A (reference: no value)"; fi
    TARGETS_NA=$((TARGETS_NA + 1))
  fi
  echo "| $label | $(show_val "$sv") | $rlabel: $(show_val "$ref" "$f") | $r | $cmp ${goal}x | $res$(noise_note "$sv" "$ref") |"
}

# The closest reference of a softverbs key: sets REF REFLABEL REFF.
ref_of() {  # sv/WHERE/TEST/SIZE
  local where test size
  IFS=/ read -r _ where test size <<<"$1"
  REF="" REFLABEL="" REFF=1
  if [[ $where == host ]]; then
    case $test in
      send_lat|write_lat) REF=ucx-posix/host/tag_lat/$size REFLABEL="UCX posix tag_lat" ;;
      send_lat_ev|rc_pingpong_ev|qperf_rc_lat) REF=shm/host/eventfd_lat/$size REFLABEL="eventfd ping-pong, both asleep" ;;
      send_lat_ud) REF=sv/host/send_lat/$size REFLABEL="ib_send_lat (RC)" ;;
      send_ud_rate) REF=sv/host/send_rate/$size REFLABEL="ib_send_bw (RC) msg rate" ;;
      fi_rdm) REF=sv/host/fi_msg/$size REFLABEL="fi_pingpong -p verbs -e msg" ;;
      fi_msg) REF=fi-shm/host/pingpong/$size REFLABEL="fi_pingpong shm" ;;
      fi_dgram) REF=sv/host/send_lat_ud/$size REFLABEL="ib_send_lat -c UD" ;;
      read_lat) REF=ucx-posix/host/tag_lat/$size REFLABEL="2 × UCX posix tag_lat (round trip)" REFF=2 ;;
      *_bw) REF=ucx-posix/host/tag_bw/$size REFLABEL="UCX posix tag_bw" ;;
      *_rate) REF=ucx-posix/host/tag_rate/$size REFLABEL="UCX posix tag_bw msg rate" ;;
    esac
  else
    case $test in
      send_lat|write_lat) REF=tcp/veth/lat/$size REFLABEL="TCP busy-poll ping-pong, veth" ;;
      send_lat_ev) REF=tcp/veth/latb/$size REFLABEL="TCP ping-pong, both asleep in recv(), veth" ;;
      read_lat) REF=tcp/veth/lat/$size REFLABEL="2 × TCP ping-pong, veth (round trip)" REFF=2 ;;
      *_bw) REF=tcp/veth/bw/$size REFLABEL="TCP stream, veth" ;;
    esac
  fi
}

# Human names of the reference keys' tool/test parts.
ref_label() {  # KEY
  local tool where test size
  IFS=/ read -r tool where test size <<<"$1"
  case $tool/$test in
    memcpy/copy) echo "memcpy, one core" ;;
    pvm/writev_lat) echo "process_vm_writev, per call" ;;
    pvm/writev_bw) echo "process_vm_writev bandwidth" ;;
    shm/spin_lat) echo "shared-memory ping-pong, spinning (one-way)" ;;
    shm/futex_lat) echo "shared-memory ping-pong, futex wake (one-way)" ;;
    shm/eventfd_lat) echo "shared-memory ping-pong, both asleep in read() of an eventfd (one-way)" ;;
    tcp/lat) echo "TCP ping-pong, busy-poll (one-way)" ;;
    tcp/latb) echo "TCP ping-pong, blocking sockets: both asleep in recv() (one-way)" ;;
    tcp/lat2) echo "TCP ping-pong over two connections, one per direction (softverbs' design), busy-poll (one-way)" ;;
    tcp/ulat) echo "UDP ping-pong, connected sockets, busy-poll (one-way): the floor of RC over UDP" ;;
    tcp/bw) echo "TCP stream" ;;
    ucx-*/tag_lat) echo "UCX ${tool#ucx-} tag_lat (one-way, median)" ;;
    ucx-*/tag_bw) echo "UCX ${tool#ucx-} tag_bw" ;;
    ucx-*/tag_rate) echo "UCX ${tool#ucx-} tag_bw message rate" ;;
    fi-*/pingpong) echo "libfabric ${tool#fi-} fi_pingpong (one-way, mean)" ;;
    *) echo "$tool $test" ;;
  esac
}

bench_machine_desc() {
  local cpu mem
  cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)
  [[ -n $cpu ]] || cpu=$(uname -m)
  mem=$(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo 2>/dev/null)
  echo "nproc $(nproc), CPU $cpu, $mem RAM, kernel $(uname -r)"
}

bench_versions() {
  dpkg-query -W -f='${Package} ${Version}\n' perftest ucx-utils libfabric-bin rdmacm-utils 2>/dev/null |
    awk '{ printf "%s%s %s", sep, $1, $2; sep = ", " } END { print "" }'
}

# The perftest rows the tables show, in order: "WHERE TEST SIZE" a line.
pt_rows() {
  local where test size
  for where in host veth; do
    for test in send_lat send_lat_ev send_lat_ud send_ud_rate rc_pingpong_ev qperf_rc_lat fi_rdm fi_rdm_setup fi_msg fi_msg_setup fi_dgram fi_dgram_setup write_lat read_lat send_bw write_bw read_bw send_rate write_rate read_rate; do
      for size in 8 64 4096 65536 1048576; do echo "$where $test $size"; done
    done
  done
}

# A perftest row's name for people.
pt_name() {  # TEST
  local t
  case $1 in
    send_ud_rate) echo "ib_send_bw -c UD msg rate" ;;
    *_ud) echo "ib_${1%_ud} -c UD" ;;
    *_rate) echo "ib_${1%_rate}_bw msg rate" ;;
    rc_pingpong_ev) echo "ibv_rc_pingpong -e" ;;
    qperf_rc_lat) echo "qperf rc_lat" ;;
    fi_rdm|fi_msg|fi_dgram) echo "fi_pingpong -p verbs -e ${1#fi_}, connected" ;;
    fi_*_setup) t=${1#fi_}; echo "fi_pingpong -p verbs -e ${t%_setup}: its clock before the first transfer" ;;
    *_ev) echo "ib_${1%_ev} -e" ;;
    *) echo "ib_$1" ;;
  esac
}

# rsockets (rsockets.sh): rstream over softverbs next to rstream -T s, the
# same program on the kernel's TCP over the same path.
rs_table() {
  local where test size k t r
  echo "### rsockets: rstream against the kernel's TCP (rstream -T s)"
  echo
  echo "| test | where | rstream (rsockets) | rstream -T s (TCP) | ratio | runs ok (range), rsockets / TCP |"
  echo "|---|---|---|---|---|---|"
  for where in host veth; do
    for test in lat/64 bw/1048576; do
      k=rs/$where/$test t=rs-tcp/$where/$test
      [[ -n ${NALL[$k]:-} || -n ${NALL[$t]:-} ]] || continue
      size=${test#*/}
      r=$(ratio_of "$k" "$t") && r="${r}x" || r="—"
      echo "| ${test%/*} $(fmt_size "$size") | $where | $(show_val "$k") | $(show_val "$t") | $r | $(runs_of "$k") / $(runs_of "$t") |"
      k=rio/$where/$test
      [[ -n ${NALL[$k]:-} ]] || continue
      r=$(ratio_of "$k" "$t") && r="${r}x" || r="—"
      echo "| lat $(fmt_size "$size"), riostream | $where | $(show_val "$k") | $(show_val "$t") | $r | $(runs_of "$k") / $(runs_of "$t") |"
    done
  done
  echo
  echo "Latency: usec/xfer (one-way), lower is better; bandwidth: MiB/s, higher is better."
  echo "riostream: the waiting side watches its riomap'ed buffer for the peer's riowrite."
  echo
}

# --against: each perftest row of this build next to the other build's,
# measured right after it in every repetition.  "within spread" when the
# two ranges of runs overlap; else better or worse for this build.
ab_table() {
  local where test size k o unit lower v commit
  commit=$(git -C "$BENCH_AGAINST/.." rev-parse --short HEAD 2>/dev/null || echo "?")
  echo "### This build against \`$BENCH_AGAINST\` (old)"
  echo
  echo "Each perftest run of this build was followed by the same run of the old"
  echo "one (\`--against\`; old build's checkout at $commit)."
  echo
  echo "| test | where | size | new: median (range) | old: median (range) | new / old | verdict |"
  echo "|---|---|---|---|---|---|---|"
  while read -r where test size; do
    k=sv/$where/$test/$size o=old/$where/$test/$size
    { has_val "$k" && has_val "$o"; } || continue
    unit=${UNITOF[$k]}
    lower=0; [[ $unit == us ]] && lower=1
    v=$(awk -v nl="${LO[$k]}" -v nh="${HI[$k]}" -v ol="${LO[$o]}" -v oh="${HI[$o]}" \
          -v nm="${MED[$k]}" -v om="${MED[$o]}" -v lower="$lower" 'BEGIN {
          if (nl <= oh && ol <= nh) print "within spread"
          else if ((nm < om) == (lower == 1)) print "better"
          else print "**worse**" }')
    echo "| $(pt_name "$test") | $where | $(fmt_size "$size") | $(show_val "$k") ($(fmt_num "${LO[$k]}")–$(fmt_num "${HI[$k]}")) |" \
         "$(show_val "$o") ($(fmt_num "${LO[$o]}")–$(fmt_num "${HI[$o]}")) | $(ratio_of "$k" "$o" 1)x | $v |"
  done < <(pt_rows)
  echo
}

bench_report() {  # OUT.md
  local out=$1 k tool where test size commit dirty="" s sv t
  commit=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
  if [[ -n $(git -C "$REPO" status --porcelain --untracked-files=no 2>/dev/null) ]]; then
    dirty=" (with uncommitted changes)"
  fi
  {
    echo "## Run of $(date '+%Y-%m-%d %H:%M:%S %Z'), commit \`$commit\`$dirty"
    echo
    echo "- Machine: $(bench_machine_desc)"
    echo "- Load average at start: ${BENCH_LOAD_START:-?}; at end: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "- Tools: $(bench_versions)"
    echo "- $BENCH_REPS_DONE of $BENCH_REPS repetitions, interleaved (each repetition runs every tool once);" \
         "values are medians over the repetitions of what each tool reports" \
         "(latency: perftest t_typical and UCX 50th percentile, both medians of a run;" \
         "fi_pingpong the run's mean; -p verbs rows once connected, from two runs). Latencies are one-way except ib_read_lat (a READ round trip)." \
         "MiB/s = 2^20 bytes per second (perftest's and UCX's MB/s)."
    echo "- Duration: $(( $(date +%s) - BENCH_START )) s; logs in \`$BENCH_WORK\` (samples.tsv, medians.tsv, timings.tsv, logs/)"
    if [[ ${BENCH_VETH_RAN:-0} != 1 ]]; then
      echo "- Across veth: not measured: ${SVB_VETH_WHY:-disabled}"
    else
      echo "- Across veth: server in network namespace $SVB_NS_A ($SVB_ADDR_A), client in $SVB_NS_B ($SVB_ADDR_B), each with fresh /dev/shm and /tmp"
    fi
    echo

    echo "### Targets"
    echo
    echo "| target | softverbs | reference | ratio | goal | result |"
    echo "|---|---|---|---|---|---|"
    for t in send write; do
      target "same host ib_${t}_lat 8 B vs UCX posix" "sv/host/${t}_lat/8" ucx-posix/host/tag_lat/8 "UCX posix tag_lat" le 1 1 \
             "pair/host/${t}_lat/8"
      target "same host ib_${t}_lat 8 B vs libfabric shm" "sv/host/${t}_lat/8" fi-shm/host/pingpong/8 "fi_pingpong shm" le 1 1 \
             "pair-fi/host/${t}_lat/8"
    done
    for t in write read send; do
      target "same host ib_${t}_bw 1 MiB vs UCX posix" "sv/host/${t}_bw/1048576" ucx-posix/host/tag_bw/1048576 "UCX posix tag_bw" ge 0.8
      target "same host ib_${t}_bw 1 MiB vs memcpy" "sv/host/${t}_bw/1048576" memcpy/host/copy/1048576 "memcpy, one core" ge 0.9 1 \
             "pair/host/${t}_bw/1048576"
    done
    for t in send write; do
      target "veth ib_${t}_lat 8 B vs TCP ping-pong" "sv/veth/${t}_lat/8" tcp/veth/lat/8 "TCP busy-poll, veth" le 1.1 1 \
             "pair/veth/${t}_lat/8"
    done
    for t in write read send; do
      target "veth ib_${t}_bw 4 KiB vs TCP stream" "sv/veth/${t}_bw/4096" tcp/veth/bw/4096 "TCP stream, veth" ge 0.8
    done
    for s in 65536 1048576; do
      for t in write read send; do
        target "veth ib_${t}_bw $(fmt_size "$s") vs TCP stream" "sv/veth/${t}_bw/$s" "tcp/veth/bw/$s" "TCP stream, veth" ge 0.8 1 \
               "pair/veth/${t}_bw/$s"
      done
    done
    target "same host ib_send_bw -s 8 message rate vs UCX posix" sv/host/send_rate/8 ucx-posix/host/tag_rate/8 \
           "UCX posix tag_bw msg rate" ge 1 1 "pair/host/send_rate/8"
    target "same host ib_write_bw -s 8 message rate" sv/host/write_rate/8 "" "" ge 5
    for t in send write; do
      target "veth ib_${t}_bw -s 8 message rate vs UCX tcp" "sv/veth/${t}_rate/8" \
             ucx-tcp/veth/tag_rate/8 "UCX tcp tag_bw msg rate, veth" ge 1
    done
    target "same host fi_pingpong -p verbs -e rdm 8 B vs -e msg, connected" sv/host/fi_rdm/8 sv/host/fi_msg/8 \
           "fi_pingpong -p verbs -e msg" le 2
    target "same host fi_pingpong -p verbs -e dgram 8 B, connected, vs UD ib_send_lat" sv/host/fi_dgram/8 sv/host/send_lat_ud/8 \
           "ib_send_lat -c UD" le 2
    for t in send_lat_ev rc_pingpong_ev qperf_rc_lat; do
      target "same host $(pt_name "$t") 8 B vs an eventfd ping-pong" "sv/host/$t/8" shm/host/eventfd_lat/8 \
             "eventfd ping-pong, both asleep" le 1.5
    done
    target "same host ib_send_lat -c UD 8 B vs RC" sv/host/send_lat_ud/8 sv/host/send_lat/8 \
           "ib_send_lat (RC)" le 2
    target "same host ib_send_bw -c UD -s 8 message rate vs RC" sv/host/send_ud_rate/8 sv/host/send_rate/8 \
           "ib_send_bw (RC) msg rate" ge 0.5
    target "idle: $BENCH_IDLE_QPS connected QPs, ${BENCH_IDLE_SECONDS} s" "idle/host/cpu_pct/$BENCH_IDLE_QPS" "" "" le 0.5
    target "scale: $BENCH_BIG_QPS connected RC QPs in one process" "scale/host/qps_max/$BENCH_BIG_QPS" "" "" ge "$BENCH_BIG_QPS"
    target "scale: RSS per QP with that many" "scale/host/rss_per_qp_max/$BENCH_BIG_QPS" "" "" le 16
    echo
    echo "Targets: $TARGETS_PASS passed, $TARGETS_FAIL failed, $TARGETS_NA without a value." \
         "\"noisy\": the runs of an input spread by more than 1.5x (min–max): rerun on a quieter machine before trusting that row."
    echo

    echo "### softverbs (perftest) against the closest reference"
    echo
    echo "Latency: perftest's t_typical (median of the run), its t_avg in parentheses."
    echo
    echo "| test | where | size | softverbs | reference | ratio (softverbs / reference) | runs ok (range) |"
    echo "|---|---|---|---|---|---|---|"
    while read -r where test size; do
      sv=sv/$where/$test/$size
      [[ -n ${NALL[$sv]:-} ]] || continue
      ref_of "$sv"
      local r="—" rv="—" svv
      if [[ -n $REF && -n ${NALL[$REF]:-} ]]; then
        rv="$REFLABEL: $(show_val "$REF" "$REFF")"
        r=$(ratio_of "$sv" "$REF" "$REFF") && r="${r}x" || r="—"
      fi
      svv=$(show_val "$sv")
      has_val "sv/$where/${test}_avg/$size" && svv+=" (mean $(show_val "sv/$where/${test}_avg/$size"))"
      echo "| $(pt_name "$test") | $where | $(fmt_size "$size") | $svv | $rv | $r | $(runs_of "$sv") |"
    done < <(pt_rows)
    echo

    [[ -n ${BENCH_AGAINST:-} ]] && ab_table

    echo "### References: machine limits and peers"
    echo
    echo "| measurement | where | size | median | runs ok (range) |"
    echo "|---|---|---|---|---|"
    while IFS=$'\t' read -r k _; do
      IFS=/ read -r tool where test size <<<"$k"
      case $tool in sv|old|scale|idle|cmtime|pair|rs|rs-tcp) continue ;; esac
      echo "| $(ref_label "$k") | $where | $(fmt_size "$size") | $(show_val "$k") | $(runs_of "$k") |"
    done < <(sort -t/ -k1,1 -k2,2 -k3,3 -k4,4n "$BENCH_WORK/medians.tsv")
    echo

    rs_table

    echo "### Scale and idle cost"
    echo
    echo "| measurement | value |"
    echo "|---|---|"
    local n=$BENCH_SCALE_QPS
    echo "| qp_scale: RSS per connected RC QP ($n QPs per process, after one SEND each way) | $(show_val "scale/host/rss_per_qp/$n") |"
    echo "| qp_scale: PSS per connected RC QP | $(show_val "scale/host/pss_per_qp/$n") |"
    echo "| qp_scale: open fds of the process with $n QPs | $(show_val "scale/host/fds/$n") |"
    echo "| qp_scale: threads of the process | $(show_val "scale/host/threads/$n") |"
    echo "| qp_scale: INIT→RTR→RTS of $n QPs | $(show_val "scale/host/connect_ms/$n") |"
    echo "| qp_scale: one SEND on each of $n QPs, both ways, to the last completion (the channels' handshakes included) | $(show_val "scale/host/send_ms/$n") |"
    echo "| qp_scale: the same again, every channel up | $(show_val "scale/host/send2_ms/$n") |"
    echo "| qp_scale: SEND ping-pong on one of the $n QPs, one-way | $(show_val "scale/host/pingpong_us/$n") |"
    n=$BENCH_BIG_QPS
    echo "| qp_scale: connected RC QPs per process, of the $n asked (the most that fit under the limit below: one descriptor each while it connects) | $(show_val "scale/host/qps_max/$n") |"
    echo "| qp_scale: the descriptor hard limit of that run | $(show_val "scale/host/fd_limit/$n") |"
    echo "| qp_scale: RSS per connected RC QP with that many | $(show_val "scale/host/rss_per_qp_max/$n") |"
    echo "| qp_scale: one SEND on each of them, both ways, to the last completion (handshakes included) | $(show_val "scale/host/send_ms_max/$n") |"
    echo "| qp_scale: the same again, every channel up | $(show_val "scale/host/send2_ms_max/$n") |"
    echo "| qp_scale: SEND ping-pong on one of them, one-way | $(show_val "scale/host/pingpong_us_max/$n") |"
    n=$BENCH_SCALE_QPS
    echo "| cmtime -c $n: rdma_connect per connection | $(show_val "cmtime/host/connect_us/$n") |"
    echo "| cmtime -c $n: all connections | $(show_val "cmtime/host/connect_total_ms/$n") |"
    echo "| idle: CPU of the busier of two processes with $BENCH_IDLE_QPS connected QPs each, over ${BENCH_IDLE_SECONDS} s (% of one core) | $(show_val "idle/host/cpu_pct/$BENCH_IDLE_QPS") |"
    echo

    local failed=0
    while IFS=$'\t' read -r k u m n a _ _ w; do
      ((n < a)) || continue
      if ((failed == 0)); then
        echo "### Failures"
        echo
        failed=1
      fi
      echo "- \`$k\`: $n of $a runs ok; $w"
    done <"$BENCH_WORK/medians.tsv"
    ((failed)) && echo
  } >"$out"
}
