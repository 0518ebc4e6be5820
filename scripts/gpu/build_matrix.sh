# Sourced by the toolchain finding scripts (t1.sh, t2.sh, t3.sh): one build of a
# minimal .cu under nvcc with the given flags, run N times, as one JSON line.
#   build NAME SRC ENVS FLAGS...   (W: the work folder, N: runs; ENVS: "" or
#                                   "VAR=value ..." set for the runs only)
build() { local name=$1 src=$2 envs=$3; shift 3
  local envkey=""; [ -n "$envs" ] && envkey="\"env\": \"$envs\", "
  if nvcc "$@" "$src" -o "$W/$name" >"$W/$name.log" 2>&1; then
    local right=0; for i in $(seq $N); do env $envs "$W/$name" >/dev/null 2>&1 && right=$((right+1)); done
    echo "{\"config\": \"$name\", \"flags\": \"$*\", ${envkey}\"runs\": $N, \"right\": $right, \"sample\": \"$(env $envs "$W/$name" | head -1)\"}"
  else echo "{\"config\": \"$name\", \"flags\": \"$*\", \"build_error\": true}"; fi; }
