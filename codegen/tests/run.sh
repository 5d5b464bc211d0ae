#!/bin/sh
# Tests of the op code generator. Usage: codegen/tests/run.sh path/to/ltcgen
# Builds nothing: runs the given binary on the fixtures in this folder and on the real
# codegen/ops.yaml, checking exit statuses and messages. Prints TAP-style "ok N - name" lines;
# exits non-zero if any test failed.
set -u

if [ $# -ne 1 ]; then
    echo "usage: $0 path/to/ltcgen" >&2
    exit 2
fi
case $1 in
    /*) GEN=$1 ;;
    *) GEN=$(pwd)/$1 ;;
esac
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 2
T=codegen/tests
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ltcgen-test.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT INT TERM

n=0
failed=0

# pass NAME / fail NAME REASON: one result line.
pass() {
    n=$((n + 1))
    echo "ok $n - $1"
}
fail() {
    n=$((n + 1))
    failed=$((failed + 1))
    echo "not ok $n - $1: $2"
    sed 's/^/#   /' "$TMP/err"
}

# run_fixture DIR [extra args]: runs ltcgen on $T/DIR/{ops,backend}.yaml, shape.h and impl/
# with --dry-run; stdout to $TMP/out, stderr to $TMP/err, exit status in $rc.
run_fixture() {
    d=$T/$1
    shift
    "$GEN" --source "$d/ops.yaml" --backend-yaml "$d/backend.yaml" --shape-header "$d/shape.h" \
        --impl-path "$d/impl" --backend-name cpu --output-dir "$TMP/never" --dry-run "$@" \
        >"$TMP/out" 2>"$TMP/err"
    rc=$?
}

# expect_error NAME TEXT...: checks rc == 1 and that stderr contains each TEXT as a fixed string.
expect_error() {
    name=$1
    shift
    if [ "$rc" -ne 1 ]; then
        fail "$name" "exit status $rc, expected 1"
        return
    fi
    for text in "$@"; do
        if ! grep -qF -- "$text" "$TMP/err"; then
            fail "$name" "stderr lacks: $text"
            return
        fi
    done
    pass "$name"
}

# 1. malformed YAML: libyaml's problem at file:line:column
"$GEN" --source $T/malformed.yaml --backend-yaml codegen/cpu_backend.yaml --dry-run \
    >"$TMP/out" 2>"$TMP/err"
rc=$?
expect_error "malformed YAML is reported at file:line:column" \
    "$T/malformed.yaml:6:7: did not find expected ',' or ']'"

# 2. a full_codegen op without a shape function: the declaration to add (and the others)
run_fixture missing_shape
baz="    ltc_status ltc_shape_baz(const ltc_shape *self, int64_t dim, bool keepdim,"
expect_error "missing shape function prints the declaration to add" \
    "error: full_codegen op 'foo' has no shape function; add to $T/missing_shape/shape.h:" \
    "    ltc_status ltc_shape_foo(const ltc_shape *self, const ltc_shape *other, ltc_shape *out);" \
    "$baz ltc_shape *out);"

# 3. a full_codegen op without an expr (same run: every error is reported)
expect_error "full_codegen op without expr is reported with the others" \
    "error: full_codegen op 'qux' has no expr in ops.yaml"

# 4. a supported op without its hand-written kernel
run_fixture missing_kernel
k="error: supported op 'bar' has no hand-written kernel: define ltc_status"
k="$k ltc_cpu_kernel_bar(const ltc_kernel_args *a) in $T/missing_kernel/impl/"
expect_error "missing hand-written kernel names the function to define" "$k"
if grep -q "'done'" "$TMP/err"; then fail "an existing kernel is found" "done was reported"
else pass "an existing kernel is found"; fi

# 4b. a kernel must be defined, with the kernel signature, not static: a name in a comment,
# a string, a macro or a call, a declaration alone or a wrong signature fail with the line
# to write; a definition as it should be passes.
run_fixture kernel_checks
d="$T/kernel_checks/impl"
sig="(const ltc_kernel_args *a)"
expect_error "a kernel named only in comments, a string, a macro and a call is missing" \
    "error: supported op 'incomment' has no hand-written kernel: define ltc_status ltc_cpu_kernel_incomment$sig in $d/"
expect_error "a kernel with a wrong signature names the file, the line and the line to write" \
    "error: supported op 'wrongsig': ltc_cpu_kernel_wrongsig at $d/kernels.c:9 is \`ltc_status ltc_cpu_kernel_wrongsig(const ltc_kernel_args *, int)\`, not a kernel; define it in $d/ as:" \
    "    ltc_status ltc_cpu_kernel_wrongsig$sig" \
    "error: supported op 'wrongret': ltc_cpu_kernel_wrongret at $d/kernels.c:14 is \`int ltc_cpu_kernel_wrongret(const ltc_kernel_args *)\`, not a kernel; define it in $d/ as:" \
    "    ltc_status ltc_cpu_kernel_wrongret$sig"
expect_error "a kernel declared only, or static, is refused with the line to write" \
    "error: supported op 'declonly': ltc_cpu_kernel_declonly is declared at $d/kernels.c:16 but defined nowhere in $d/; define it there:" \
    "    ltc_status ltc_cpu_kernel_declonly$sig" \
    "error: supported op 'isstatic': ltc_cpu_kernel_isstatic at $d/kernels.c:18 is static"
if grep -q "'good'" "$TMP/err" || ! grep -q "^ltcgen: 5 errors" "$TMP/err"
then fail "a kernel defined as it should be passes" "good was reported"
else pass "a kernel defined as it should be passes"; fi

# 4c. a shape function must be declared with the parameter types its schema gives (names
# may differ) and return ltc_status; a name in a comment or a macro does not count.
run_fixture shape_checks
h="$T/shape_checks/shape.h"
expect_error "a shape function named only in a comment and a macro is missing" \
    "error: op 'incomment' has no shape function; add to $h:" \
    "    ltc_status ltc_shape_incomment(const ltc_shape *self, int64_t dim, ltc_shape *out);"
expect_error "a shape function with a wrong signature names the file, the line and the line to add" \
    "error: op 'wrongsig': ltc_shape_wrongsig at $h:5 is \`ltc_status ltc_shape_wrongsig(const ltc_shape *, ltc_shape *)\`, not \`ltc_status ltc_shape_wrongsig(const ltc_shape *, const ltc_shape *, ltc_shape *)\` as the op's schema needs; declare it in $h as:" \
    "    ltc_status ltc_shape_wrongsig(const ltc_shape *self, const ltc_shape *other, ltc_shape *out);" \
    "error: op 'wrongret': ltc_shape_wrongret at $h:7 is \`void ltc_shape_wrongret(const ltc_shape *, ltc_shape *)\`" \
    "    ltc_status ltc_shape_wrongret(const ltc_shape *self, ltc_shape *out);"
if grep -q -e "'good'" -e "'exported'" "$TMP/err" || ! grep -q "^ltcgen: 3 errors" "$TMP/err"
then fail "a shape function declared as it should be passes" "good or exported was reported"
else pass "a shape function declared as it should be passes"; fi

# 5. load errors: unknown key, bad schemas, a list name that is not an op; all reported
run_fixture bad_entries
expect_error "unknown keys, bad schemas and unknown op names are all reported" \
    "$T/bad_entries/ops.yaml:5:3: unknown key 'shpae'" \
    "$T/bad_entries/ops.yaml:7:9: bad schema 'two(Tensor self, dim dim=0) -> Tensor'" \
    "$T/bad_entries/ops.yaml:10:9: bad schema 'three(Tensor self, Complex c) -> Tensor'" \
    "$T/bad_entries/ops.yaml:13:9: bad schema 'four(Tensor self, int[2] k, int[2] s=nosuch) -> Tensor'" \
    "$T/bad_entries/ops.yaml:18:14: composite: cannot open 'no/such.lua'" \
    "$T/bad_entries/ops.yaml:20:9: a Generator? argument (one at most) goes with \`random: <count function>\`, and such a random key with one" \
    "$T/bad_entries/ops.yaml:25:11: random must be true, false or the C function (ltc_...) that counts the numbers an op with a Generator? argument draws, not 'maybe'" \
    "$T/bad_entries/ops.yaml:27:9: bad schema 'eight(int low=0, int high, int size) -> Tensor': a required argument follows a default (only \`int a=N, int b, int[] c\` may" \
    "$T/bad_entries/ops.yaml:30:9: bad schema 'nine.kw(Tensor self, *, mode) -> Tensor': expected \`Type name\` as argument 2" \
    "$T/bad_entries/backend.yaml:4:5: full_codegen lists 'nosuch'" \
    "$T/bad_entries/backend.yaml:6:5: skips_unread_outputs lists 'one', which is not a supported op with several results"

run_fixture bad_overload
expect_error "overload_of naming no op, or on an op without Tensor self first, is reported" \
    "$T/bad_overload/ops.yaml: op 'negate': overload_of 'nosuch' must name another op's Lua name" \
    "$T/bad_overload/ops.yaml: op 'negative': overload_of 'neg' must name another op's Lua name"
expect_error "a composite overload naming no generated op, or without keywords, is reported" \
    "$T/bad_overload/ops.yaml:27:9: composite op 'neg.kw': overload_of 'nosuch' must name a generated op's Lua name, for a composite that takes \`Tensor self\` first and keyword-only arguments (after \`*\`)" \
    "$T/bad_overload/ops.yaml:32:9: composite op 'negate.positional': overload_of 'negate' must name a generated op's Lua name"
expect_error "a keyword table where another overload takes a table, or a second one, is reported" \
    "$T/bad_overload/ops.yaml:22:9: composite op 'pad.kw': its keyword table, argument #2 of pad, would be taken for 'sizes' of 'pad' (int[])" \
    "$T/bad_overload/ops.yaml:42:9: composite op 'neg.second': 'neg' has a composite overload already, 'neg.first' (one table of keywords per name)"

# 6. every schema type generates (the dry run writes nothing, not even the output folder)
run_fixture all_types
name="dry run of every schema type succeeds and writes nothing"
if [ "$rc" -eq 0 ] && [ ! -e "$TMP/never" ] &&
    grep -q "would write: $TMP/never/lua_ops.c" "$TMP/out"; then pass "$name"
else fail "$name" "rc=$rc"; fi

# 7. the real ops.yaml, twice: byte-identical output; a third run rewrites nothing.
# The supported ops' kernels may not be written yet: a stub file names them all.
mkdir -p "$TMP/impl"
sed -n '/^supported:/,/^[a-z_]*:/s/^ *- *\([a-z0-9_.]*\).*/\1/p' codegen/cpu_backend.yaml |
    tr . _ | sed 's/.*/ltc_status ltc_cpu_kernel_&(const ltc_kernel_args *a) { return 0; }/' \
    >"$TMP/impl/stub.c"
real() {
    "$GEN" --source codegen/ops.yaml --backend-yaml codegen/cpu_backend.yaml --output-dir "$1" \
        --impl-path "$TMP/impl" --shape-header src/core/shape_inference.h --backend-name cpu \
        >"$TMP/out" 2>"$TMP/err"
}
if real "$TMP/a" && real "$TMP/b" && diff -r "$TMP/a" "$TMP/b" >"$TMP/err" 2>&1 &&
    [ "$(ls "$TMP/a" | wc -l)" -eq 8 ]
then pass "the real ops.yaml generates the same 8 files twice"
else fail "the real ops.yaml generates the same 8 files twice" "outputs differ or failed"; fi
touch -d '2000-01-01' "$TMP/a"/*
if real "$TMP/a" && [ ! -s "$TMP/out" ] && [ -z "$(find "$TMP/a" -type f -newermt '2001-01-01')" ]
then pass "an unchanged file is not rewritten"
else fail "an unchanged file is not rewritten" "files were touched"; fi

# 8. the core's files come from ops.yaml alone: another backend YAML (other lowerings, no
# non_native list) gives byte-identical core files; ops.md differs only in its backend lines.
"$GEN" --source codegen/ops.yaml --backend-yaml $T/second_backend/backend.yaml \
    --output-dir "$TMP/toy" --impl-path $T/second_backend/impl \
    --shape-header src/core/shape_inference.h --backend-name toy >"$TMP/out" 2>"$TMP/err"
rc=$?
name="another backend YAML gives the same core files"
core="ltc_ops.h ltc_ops.c lua_ops.c derivatives.c derivatives.lua ops_meta.lua"
if [ "$rc" -ne 0 ]; then fail "$name" "rc=$rc"
else
    for f in $core; do cmp "$TMP/a/$f" "$TMP/toy/$f" >>"$TMP/err" 2>&1 || rc=1; done
    if [ "$rc" -eq 0 ] && [ -f "$TMP/toy/toy_ops.c" ] && [ ! -e "$TMP/toy/cpu_ops.c" ]
    then pass "$name"; else fail "$name" "core files differ"; fi
fi
name="ops.md differs only in the lines naming the backend"
for d in a toy; do
    grep -v -e '^- [a-z]* backend: ' -e '^Generated by ltcgen from ' "$TMP/$d/ops.md" \
        >"$TMP/$d.md"
done
if diff "$TMP/a.md" "$TMP/toy.md" >"$TMP/err" 2>&1 && grep -q '^- toy backend: ' "$TMP/toy/ops.md"
then pass "$name"; else fail "$name" "other lines differ"; fi
name="the enum is the same whatever the backend YAML (device_data is in ops.yaml)"
if grep -q '^    LTC_OP_DEVICE_DATA,' "$TMP/toy/ltc_ops.h" &&
    ! grep -q -e '^non_native:' -e 'func:' codegen/cpu_backend.yaml $T/second_backend/backend.yaml
then pass "$name"; else fail "$name" "LTC_OP_DEVICE_DATA missing"; fi

# 9. --backend-only: a second backend's glue next to the core's files, which it leaves alone
# (not rewritten, not even checked: no shape header is needed), as gen_lazy_tensor.py runs
# per backend. Its glue is the one a full run for that backend writes.
touch -d '2000-01-01' "$TMP/a"/*
"$GEN" --source codegen/ops.yaml --backend-yaml $T/second_backend/backend.yaml \
    --output-dir "$TMP/a" --impl-path $T/second_backend/impl --shape-header "$TMP/none.h" \
    --backend-name toy --backend-only >"$TMP/out" 2>"$TMP/err"
rc=$?
name="--backend-only writes only the backend's glue"
if [ "$rc" -eq 0 ] && [ "$(cat "$TMP/out")" = "ltcgen: wrote $TMP/a/toy_ops.c" ] &&
    cmp -s "$TMP/a/toy_ops.c" "$TMP/toy/toy_ops.c" &&
    [ "$(find "$TMP/a" -type f -newermt '2001-01-01')" = "$TMP/a/toy_ops.c" ]
then pass "$name"; else fail "$name" "rc=$rc; $(cat "$TMP/out")"; fi
name="--backend-only leaves the core's files as they were"
if diff -r -x toy_ops.c "$TMP/a" "$TMP/b" >"$TMP/err" 2>&1 && [ ! -e "$TMP/none.h" ]
then pass "$name"; else fail "$name" "core files changed"; fi
"$GEN" --source codegen/ops.yaml --backend-yaml $T/second_backend/backend.yaml \
    --output-dir "$TMP/a" --impl-path $T/second_backend/impl --backend-name toy \
    --backend-only --ref-impl-path src/ref >"$TMP/out" 2>"$TMP/err"
rc=$?
expect_error "--backend-only refuses the core's options" \
    "error: --backend-only writes only the backend's glue: --ref-impl-path belongs to the core's run"
"$GEN" --source codegen/ops.yaml --backend-yaml $T/second_backend/backend.yaml \
    --output-dir "$TMP/never" --impl-path $T/missing_kernel/impl --backend-name toy \
    --backend-only >"$TMP/out" 2>"$TMP/err"
rc=$?
expect_error "--backend-only still checks the backend's own kernels" \
    "error: supported op 'mm' has no hand-written kernel: define ltc_status ltc_toy_kernel_mm("

# 10. a backend YAML that would add node kinds (PyTorch's ir_gen and non_native) is refused
"$GEN" --source $T/all_types/ops.yaml --backend-yaml $T/core_in_backend/backend.yaml \
    --shape-header $T/all_types/shape.h --impl-path $T/all_types/impl --dry-run \
    >"$TMP/out" 2>"$TMP/err"
rc=$?
expect_error "ir_gen and non_native in a backend YAML are refused, pointing to ops.yaml" \
    "$T/core_in_backend/backend.yaml:5:9: ir_gen: a backend YAML only chooses lowerings" \
    "$T/core_in_backend/backend.yaml:7:3: non_native: a backend YAML only chooses lowerings" \
    "the core's node kinds come from $T/all_types/ops.yaml alone"

# 11. a formula reads a later output's gradient by the output's name (grad_<output>): the C
# backward takes grads[1], the Lua one grads[2]; the first output's is only `grad`
d=$T/output_grads
"$GEN" --source $d/ops.yaml --backend-yaml $d/backend.yaml --shape-header $d/shape.h \
    --impl-path $d/impl --backend-name cpu --output-dir "$TMP/og" >"$TMP/out" 2>"$TMP/err"
rc=$?
name="grad_<output> is the gradient of that output in the C and Lua backwards"
if [ "$rc" -eq 0 ] && grep -qF 'TRY(ltc_mul(grads[1], t[0], &t[1]));' "$TMP/og/derivatives.c" &&
    grep -qF 'TRY(ltc_add(grads[0], t[1], &t[2]));' "$TMP/og/derivatives.c" &&
    grep -qF 'local grad_second = grads[2]' "$TMP/og/derivatives.lua"
then pass "$name"; else fail "$name" "rc=$rc"; fi
# 12. a Generator? argument: nil in Lua, NULL in C, where the entry makes the default
# generator's state advanced by the op's `random:` count function
d=$T/all_types
"$GEN" --source $d/ops.yaml --backend-yaml $d/backend.yaml --shape-header $d/shape.h \
    --impl-path $d/impl --backend-name cpu --output-dir "$TMP/gen" >"$TMP/out" 2>"$TMP/err"
rc=$?
name="a nil Generator? argument is the default generator's state, counted by random:"
if [ "$rc" -eq 0 ] &&
    grep -qF 'st = ltc_rng_state_tensor(ltc_rng_numel_draw(in_shapes, out_shapes), &rng);' "$TMP/gen/ltc_ops.c" &&
    grep -qF 'ops[1] ? ltc_tensor_shape(ops[1]) : NULL' "$TMP/gen/ltc_ops.c" &&
    grep -qF 'if (!lua_isnoneornil(L, p_rng_state)) ltcL_checkoperand' "$TMP/gen/lua_ops.c" &&
    ! grep -qF "argument 'rng_state' is nil" "$TMP/gen/ltc_ops.c"
then pass "$name"; else fail "$name" "rc=$rc"; fi
name="an int default before required ones is left out when a table stands in the next place"
if [ "$rc" -eq 0 ] &&
    grep -qF 'int64_t low = lua_type(L, arg + 1) == LUA_TTABLE ? 0' "$TMP/gen/lua_ops.c" &&
    grep -qF ': ltcL_optint(L, arg++, 0, "span");' "$TMP/gen/lua_ops.c"
then pass "$name"; else fail "$name" "rc=$rc"; fi
name="a composite overload is picked by the table of its keywords and calls its Lua function"
if [ "$rc" -eq 0 ] &&
    grep -qF 'if (top >= 3 && lua_type(L, 3) == LUA_TTABLE) return bind_kw_pick_kw(L);' "$TMP/gen/lua_ops.c" &&
    grep -qF 'static const char *const keywords[] = {"mode", "k", NULL};' "$TMP/gen/lua_ops.c" &&
    grep -qF 'ltcL_keywords(L, 3, keywords, "pick");' "$TMP/gen/lua_ops.c" &&
    grep -qF 'return ltcL_call_overload(L, "pick.kw", "pick");' "$TMP/gen/lua_ops.c" &&
    grep -qF '{ name = "pick", full_name = "pick.kw", composite = "lua/ltc/ops.lua", overload_of = "pick" },' "$TMP/gen/ops_meta.lua"
then pass "$name"; else fail "$name" "rc=$rc"; fi
run_fixture bad_output_grad
expect_error "grad_<output> of the first output or of no output is an unknown name" \
    "op 'split2': the derivative for 'self' uses the unknown name 'grad_first' (known names: grad, grads, first, second, grad_second, self, F, ltc, math)"

echo "1..$n"
[ "$failed" -eq 0 ]
