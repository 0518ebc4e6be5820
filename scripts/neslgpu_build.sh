#!/usr/bin/env bash
# Issue 29 item 6: build the public NESL 3.1 VCODE interpreter of Nessie-Compiler/neslgpu
# (a third-party compiler under test, never committed here) from a checkout given as an
# argument, with one of its two vector libraries: the serial CVL (gcc) or the CUDA CVL
# (nvcc, sm_90a). It fetches nothing. It copies CHECKOUT/nesl to BUILD/KIND and edits
# only that copy (the checkout is left as it is).
#
#   bash scripts/neslgpu_build.sh prepare CHECKOUT       here, before a GPU call: writes
#        the generated lexer and parser into CHECKOUT/nesl/vcode (flex and bison: `apt-get
#        install flex bison`), for a machine that has neither
#   bash scripts/neslgpu_build.sh build CHECKOUT BUILD serial|cuda
#        prints the interpreter's path; exit 1 on a build error (log: BUILD/KIND.log)
#
# The edits (sed), each needed by today's toolchain; none changes what VCODE means:
#   E1 vcode/main.c, vcode/io.c: sys_errlist[errno] -> strerror(errno). glibc 2.32
#      removed sys_errlist: "undefined reference to `sys_errlist'" at the link.
#   E2 cvl/cuda/{elementwise,facilities,vprims}.c: the base class ": public
#      thrust::binary_function<T,T,T>" dropped from the functors. CCCL 3 (CUDA 13)
#      removed it: 'namespace "thrust" has no member class "binary_function"'.
#   E3 serial only, VCODE_SAME_RNG=0 leaves it out: cvl/serial/elwise.c lrand48() ->
#      random(). On Linux the serial CVL draws RAND from lrand48 (defins.h's
#      `__linux` branch), which nothing seeds, while the CUDA CVL draws it from random()
#      on the host (elementwise.c's random_vector), seeded by srandom(0): without E3 the
#      two libraries run every benchmark on different random inputs. With it both draw
#      random()'s unseeded sequence (glibc takes seed 0 as 1, its default), in the same
#      order (element 0 first), as the serial CVL does on its non-Linux branch. The
#      serial CVL is built with -include stdlib.h, which declares random() (GCC 14
#      refuses the implicit declaration).
# Flags, not edits:
#   F1 nvcc -include thrust/host_vector.h for the CUDA CVL's .c files:
#      thrust/device_vector.h no longer brings it in ('namespace "thrust" has no member
#      "host_vector"' in elementwise.c and rank.h).
#   F2 -gencode arch=compute_90a,code=sm_90a (NVCC_ARCH) for the Makefile's -arch=sm_30,
#      which nvcc 13 no longer knows (its oldest is sm_75); nvcc from PATH.
#   F3 flex --noyywrap and no -lfl: the GPU machine has no libfl (yywrap is its only use).
#      Where flex or bison is missing (or NESLGPU_PARSER=pregen) the lexer and parser
#      that `prepare` wrote into the checkout are used.
#   NESLGPU_SKIP="E1 E2 F1" leaves those out, to see the error each one answers
#   (results/lambdacu/INDEX.toml records them); NVCC_ARCH=-arch=sm_30 is the Makefile's.
#   F4 vcode/Makefile.linux for both kinds (flex, bison -y), as the top Makefile's
#      `linux` target does; the serial CVL by gcc without -O, as that target says
#      ("linux gcc breaks on cvl/serial/elwise.c").
set -uo pipefail

die() { echo "neslgpu_build: $*" >&2; exit 2; }
MODE=${1:-}
CHECKOUT=${2:-}
[ -n "$CHECKOUT" ] && [ -d "$CHECKOUT/nesl/vcode" ] \
  || die "usage: $0 prepare CHECKOUT | build CHECKOUT BUILD serial|cuda (CHECKOUT/nesl/vcode missing)"
CHECKOUT=$(cd "$CHECKOUT" && pwd)
PARSER="lex.yy.c y.tab.c y.tab.h"
skip() { case " ${NESLGPU_SKIP:-} " in *" $1 "*) return 0 ;; esac; return 1; }

gen_parser() {  # in a vcode folder: the lexer without yywrap, the yacc-style parser
  flex --noyywrap -o lex.yy.c tokens.flex && bison -y -d -o y.tab.c grammar.yy
}

case "$MODE" in
  prepare)
    command -v flex >/dev/null && command -v bison >/dev/null \
      || die "prepare needs flex and bison (apt-get install flex bison)"
    (cd "$CHECKOUT/nesl/vcode" && gen_parser) || die "flex/bison failed"
    echo "$CHECKOUT/nesl/vcode: $PARSER"
    exit 0 ;;
  build) ;;
  *) die "unknown mode '$MODE' (prepare | build)" ;;
esac

BUILD=${3:-}
KIND=${4:-}
[ -n "$BUILD" ] || die "build needs BUILD"
case "$KIND" in serial|cuda) ;; *) die "KIND must be serial or cuda, not '$KIND'" ;; esac
mkdir -p "$BUILD" && BUILD=$(cd "$BUILD" && pwd)
TREE=$BUILD/$KIND
LOG=$BUILD/$KIND.log
rm -rf "$TREE" && cp -a "$CHECKOUT/nesl" "$TREE" && mkdir -p "$TREE/lib" "$TREE/bin"
NVCC_ARCH=${NVCC_ARCH:--gencode=arch=compute_90a,code=sm_90a}
JOBS=${JOBS:-$(nproc)}

{
  cd "$TREE/vcode" || exit 1
  skip E1 || sed -i 's/sys_errlist\[errno\]/strerror(errno)/g' main.c io.c        # E1
  if [ "${NESLGPU_PARSER:-auto}" != pregen ] && command -v flex >/dev/null \
     && command -v bison >/dev/null; then
    rm -f $PARSER && gen_parser || exit 1                                       # F3
  else
    for f in $PARSER; do
      [ -f "$f" ] || { echo "no flex/bison here and no pre-generated $f:" \
        "run 'bash scripts/neslgpu_build.sh prepare CHECKOUT' where they are"; exit 1; }
    done
  fi
  touch $PARSER  # newer than tokens.flex and grammar.yy: make keeps them
  if [ "$KIND" = serial ]; then
    if [ "${VCODE_SAME_RNG:-1}" = 1 ]; then
      sed -i 's/lrand48()/random()/g' ../cvl/serial/elwise.c                    # E3
    fi
    (cd ../cvl/serial && make -j"$JOBS" TOPCC='gcc -include stdlib.h' \
       && mv libcvl.a ../../lib/libcvl-serial.a) || exit 1
    make -j"$JOBS" -f Makefile.linux TOPCC='gcc -g -O2' \
      LIBS='-lcvl-serial -lm -ldl' || exit 1                                    # F3 F4
  else
    inc="-include thrust/host_vector.h"
    skip F1 && inc=""
    (cd ../cvl/cuda \
      && { skip E2 || sed -i 's/ : public thrust::binary_function<T,T,T>//' \
             elementwise.c facilities.c vprims.c; } \
      && make -j"$JOBS" CC=nvcc \
           CFLAGS="$NVCC_ARCH --compiler-options -Wall -DCUDA -DNDEBUG $inc" \
           CPPFLAGS="$NVCC_ARCH --compiler-options -Wall" \
      && mv libcvl.a ../../lib/libcvl-cuda.a) || exit 1                         # E2 F1 F2
    make -j"$JOBS" -f Makefile.linux TOPCC="nvcc -g -O3 -DCUDA $NVCC_ARCH" \
      LIBS='-lcvl-cuda -lm -ldl' || exit 1                                      # F2 F3 F4
  fi
  mv vinterp "../bin/vinterp.$KIND"
} >"$LOG" 2>&1 || { echo "neslgpu_build: $KIND failed, last lines of $LOG:" >&2
                    tail -15 "$LOG" >&2; exit 1; }
echo "$TREE/bin/vinterp.$KIND"
