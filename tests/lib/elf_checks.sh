# Shared by the start-up contract tests (tests/startup/lazy_modules.sh,
# tests/cuda/no_cuda_in_binary.sh): what an ELF file needs and exports. Source it.

# The DT_NEEDED entries of an ELF file, one per line.
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

# Fails (exit 1, naming WHAT) when BIN needs a library matching the extended regex PATTERN,
# directly or through another library.
refuse_linked() {
  local bin="$1" pattern="$2" what="$3" direct transitive
  direct=$(needed "$bin" | grep -E "$pattern")
  [[ -z "$direct" ]] || { echo "xpusim links $what directly: $direct"; exit 1; }
  transitive=$(ldd "$bin" | grep -E "$pattern")
  [[ -z "$transitive" ]] || { echo "xpusim loads $what through its dependencies: $transitive"; exit 1; }
}

# The number of dynamic symbols FILE defines whose name contains xpusim.
xpusim_exports() { nm -D --defined-only "$1" | awk '{print $3}' | grep -c xpusim; }
