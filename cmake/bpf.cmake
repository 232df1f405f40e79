# BPF build pipeline (after libbpf-bootstrap): vmlinux.h from the running kernel's BTF into the
# build tree, clang -target bpf -> NAME.bpf.o -> bpftool gen skeleton -> NAME.skel.h, exposed as
# the INTERFACE target NAME_skel that carries libbpf and the include paths.
find_program(BPF_CLANG clang REQUIRED)
find_program(BPFTOOL bpftool PATHS /usr/sbin /usr/local/sbin REQUIRED)
set(BPF_GEN_DIR ${CMAKE_BINARY_DIR}/bpf)
file(MAKE_DIRECTORY ${BPF_GEN_DIR})

if(EXISTS /sys/kernel/btf/vmlinux)
  add_custom_command(OUTPUT ${BPF_GEN_DIR}/vmlinux.h
    COMMAND ${BPFTOOL} btf dump file /sys/kernel/btf/vmlinux format c > ${BPF_GEN_DIR}/vmlinux.h
    COMMENT "Generating vmlinux.h from /sys/kernel/btf/vmlinux")
else()
  message(FATAL_ERROR "/sys/kernel/btf/vmlinux is missing: the BPF probes need a kernel with BTF")
endif()
add_custom_target(vmlinux_h DEPENDS ${BPF_GEN_DIR}/vmlinux.h)

execute_process(COMMAND uname -m OUTPUT_VARIABLE BPF_UNAME_M OUTPUT_STRIP_TRAILING_WHITESPACE)
if(BPF_UNAME_M STREQUAL "x86_64")
  set(BPF_TARGET_ARCH x86)
elseif(BPF_UNAME_M STREQUAL "aarch64")
  set(BPF_TARGET_ARCH arm64)
else()
  set(BPF_TARGET_ARCH ${BPF_UNAME_M})
endif()

# bpf_object(NAME SOURCE [DEPENDS headers...]): builds NAME.bpf.o and NAME.skel.h, and the
# INTERFACE target NAME_skel.
function(bpf_object name src)
  cmake_parse_arguments(ARG "" "" "DEPENDS" ${ARGN})
  get_filename_component(src_abs ${src} ABSOLUTE)
  get_filename_component(src_dir ${src_abs} DIRECTORY)
  set(obj ${BPF_GEN_DIR}/${name}.bpf.o)
  set(skel ${BPF_GEN_DIR}/${name}.skel.h)
  add_custom_command(OUTPUT ${obj}
    COMMAND ${BPF_CLANG} -g -O2 -Wall -Werror -target bpf -D__TARGET_ARCH_${BPF_TARGET_ARCH}
            -I${BPF_GEN_DIR} -I${src_dir} -I${CMAKE_SOURCE_DIR}/common -c ${src_abs} -o ${obj}
    DEPENDS ${src_abs} ${ARG_DEPENDS} vmlinux_h
    COMMENT "BPF ${name}.bpf.o")
  add_custom_command(OUTPUT ${skel}
    COMMAND ${BPFTOOL} gen skeleton ${obj} name ${name} > ${skel}
    DEPENDS ${obj}
    COMMENT "BPF skeleton ${name}.skel.h")
  add_custom_target(${name}_skel_gen DEPENDS ${skel})
  add_library(${name}_skel INTERFACE)
  add_dependencies(${name}_skel ${name}_skel_gen)
  target_include_directories(${name}_skel INTERFACE ${BPF_GEN_DIR})
  target_link_libraries(${name}_skel INTERFACE PkgConfig::LIBBPF elf z)
endfunction()
