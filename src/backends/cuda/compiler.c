/* SPDX-License-Identifier: Apache-2.0 */
/* Generated CUDA C to cubins (compiler.h): NVRTC by dlopen, or nvcc as a process, behind
 * the disk cache. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen/kernel_source.h"
#include "backends/cuda/compiler.h"
#include "base/dynlib.h"

/* The flags every cubin is built with: IEEE arithmetic as written. */
static const char *const FLAGS[] = {"--fmad=false", "--prec-div=true", "--prec-sqrt=true"};
#define N_FLAGS 3

/* ---- which compiler ---------------------------------------------------------------------- */

typedef int nvrtc_result;
typedef void *nvrtc_program;

static struct {
    nvrtc_result (*version)(int *, int *);
    nvrtc_result (*create)(nvrtc_program *, const char *, const char *, int, const char *const *,
                           const char *const *);
    nvrtc_result (*compile)(nvrtc_program, int, const char *const *);
    nvrtc_result (*log_size)(nvrtc_program, size_t *);
    nvrtc_result (*log)(nvrtc_program, char *);
    nvrtc_result (*cubin_size)(nvrtc_program, size_t *);
    nvrtc_result (*cubin)(nvrtc_program, char *);
    nvrtc_result (*destroy)(nvrtc_program *);
} nvrtc;

static struct {
    bool nvrtc, nvcc;
    char nvcc_path[512];
    char id[64];      /* the compiler and its version, for keys and reports */
    char reason[800]; /* when neither */
} found;

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void find_compiler(void) {
    static const char *const names[] = {
        "nvrtcVersion",       "nvrtcCreateProgram", "nvrtcCompileProgram", "nvrtcGetProgramLogSize",
        "nvrtcGetProgramLog", "nvrtcGetCUBINSize",  "nvrtcGetCUBIN",       "nvrtcDestroyProgram"};
    void *const slots[] = {&nvrtc.version, &nvrtc.create,     &nvrtc.compile, &nvrtc.log_size,
                           &nvrtc.log,     &nvrtc.cubin_size, &nvrtc.cubin,   &nvrtc.destroy};
    char err[200] = "";
    const char *lib = getenv("KILN_NVRTC");
    if (kiln__dynlib_open(lib && *lib ? lib : "libnvrtc.so.13", "NVRTC", names, slots, 8, err,
                          sizeof err)) {
        int major = 0, minor = 0;
        nvrtc.version(&major, &minor);
        found.nvrtc = true;
        snprintf(found.id, sizeof found.id, "nvrtc %d.%d", major, minor);
        return;
    }
    const char *nvcc = getenv("KILN_NVCC");
    snprintf(found.nvcc_path, sizeof found.nvcc_path, "%s",
             nvcc && *nvcc ? nvcc : "/usr/local/cuda/bin/nvcc");
    if (access(found.nvcc_path, X_OK) == 0) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "'%s' --version 2>/dev/null", found.nvcc_path);
        FILE *p = popen(cmd, "r");
        char line[256], version[64] = "?";
        while (p && fgets(line, sizeof line, p)) {
            const char *at = strstr(line, "release ");
            if (at) sscanf(at + 8, "%63[^,\n]", version);
        }
        if (p) pclose(p);
        found.nvcc = true;
        snprintf(found.id, sizeof found.id, "nvcc %.32s", version);
        return;
    }
    snprintf(found.reason, sizeof found.reason, "no CUDA compiler: %.200s; and no nvcc at %.500s",
             err, found.nvcc_path);
}

bool kiln__cuda_compiler_available(char *reason, size_t cap) {
    pthread_once(&once, find_compiler);
    if (found.nvrtc || found.nvcc) return true;
    snprintf(reason, cap, "%s", found.reason);
    return false;
}

/* ---- compiling ----------------------------------------------------------------------------- */

static kiln_status with_nvrtc(kiln_ctx *cx, const char *text, int arch, kiln__cubin *out) {
    nvrtc_program prog;
    if (nvrtc.create(&prog, text, "kiln.cu", 0, NULL, NULL) != 0)
        return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "cuda: nvrtcCreateProgram failed");
    char gpu[48];
    snprintf(gpu, sizeof gpu, "--gpu-architecture=sm_%d", arch);
    const char *opts[N_FLAGS + 2] = {gpu, "--ptxas-options=--verbose"};
    for (int i = 0; i < N_FLAGS; i++)
        opts[2 + i] = FLAGS[i];
    nvrtc_result rc = nvrtc.compile(prog, N_FLAGS + 2, opts);
    size_t n = 0;
    if (nvrtc.log_size(prog, &n) == 0 && n > 1) {
        char *log = malloc(n);
        if (log && nvrtc.log(prog, log) == 0) snprintf(out->log, sizeof out->log, "%s", log);
        free(log);
    }
    kiln_status s = KILN_OK;
    if (rc != 0)
        s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "cuda: NVRTC failed: %.1500s", out->log);
    if (s == KILN_OK &&
        (nvrtc.cubin_size(prog, &out->size) != 0 ||
         !(out->data = malloc(out->size ? out->size : 1)) || nvrtc.cubin(prog, out->data) != 0))
        s = kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "cuda: no cubin from NVRTC");
    nvrtc.destroy(&prog);
    return s;
}

static kiln_status with_nvcc(kiln_ctx *cx, const char *text, int arch, kiln__cubin *out) {
    const char *tmp = getenv("TMPDIR");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/kiln-nvcc-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return kiln_ctx_set_error(cx, KILN_UNAVAILABLE, "cuda: cannot make a directory in %s",
                                  tmp && *tmp ? tmp : "/tmp");
    char src[600], bin[600], log[600], cmd[2400];
    snprintf(src, sizeof src, "%s/kiln.cu", dir);
    snprintf(bin, sizeof bin, "%s/kiln.cubin", dir);
    snprintf(log, sizeof log, "%s/log", dir);
    kiln_status s = KILN_OK;
    FILE *f = fopen(src, "w");
    if (!f || fputs(text, f) < 0)
        s = kiln_ctx_set_error(cx, KILN_UNAVAILABLE, "cuda: cannot write %s", src);
    if (f) fclose(f);
    if (s == KILN_OK) {
        /* unused prelude functions are not news (warning 177) */
        int len = snprintf(cmd, sizeof cmd, "'%s' -arch=sm_%d -cubin -Xptxas -v -diag-suppress=177",
                           found.nvcc_path, arch);
        for (int i = 0; i < N_FLAGS; i++)
            len += snprintf(cmd + len, sizeof cmd - (size_t)len, " %s", FLAGS[i]);
        snprintf(cmd + len, sizeof cmd - (size_t)len, " -o '%s' '%s' > '%s' 2>&1", bin, src, log);
        int rc = system(cmd);
        FILE *lf = fopen(log, "r");
        if (lf) {
            size_t n = fread(out->log, 1, sizeof out->log - 1, lf);
            out->log[n] = 0;
            fclose(lf);
        }
        if (rc != 0)
            s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "cuda: nvcc failed: %.1500s",
                                   out->log);
    }
    if (s == KILN_OK) {
        FILE *b = fopen(bin, "rb");
        long size = -1;
        if (b && fseek(b, 0, SEEK_END) == 0) size = ftell(b);
        if (b && size > 0 && fseek(b, 0, SEEK_SET) == 0 && (out->data = malloc((size_t)size)) &&
            fread(out->data, 1, (size_t)size, b) == (size_t)size)
            out->size = (size_t)size;
        else
            s = kiln_ctx_set_error(cx, KILN_UNAVAILABLE, "cuda: nvcc wrote no cubin");
        if (b) fclose(b);
    }
    unlink(src), unlink(bin), unlink(log), rmdir(dir);
    return s;
}

kiln_status kiln__cuda_compile(kiln_ctx *cx, const char *source, int arch, kiln__disk_cache *cache,
                               kiln__cubin *out) {
    memset(out, 0, sizeof *out);
    char reason[800];
    if (!kiln__cuda_compiler_available(reason, sizeof reason))
        return kiln_ctx_set_error(cx, KILN_UNAVAILABLE, "cuda: %s", reason);
    snprintf(out->compiler, sizeof out->compiler, "%s", found.id);
    /* the key: prelude, source, architecture, flags, compiler */
    const char *prelude = kiln__kernel_prelude();
    char archs[16];
    snprintf(archs, sizeof archs, "sm_%d", arch);
    const void *parts[4 + N_FLAGS] = {prelude, source, archs, found.id};
    size_t sizes[4 + N_FLAGS] = {strlen(prelude), strlen(source), strlen(archs), strlen(found.id)};
    for (int i = 0; i < N_FLAGS; i++)
        parts[4 + i] = FLAGS[i], sizes[4 + i] = strlen(FLAGS[i]);
    char key[KILN__CACHE_KEY_HEX];
    kiln__cache_key_parts(parts, sizes, 4 + N_FLAGS, key);
    if (cache && (out->data = kiln__disk_cache_get(cache, key, &out->size)) != NULL) {
        out->cached = true;
        return KILN_OK;
    }
    size_t n = sizes[0] + sizes[1] + 2;
    char *text = malloc(n);
    if (!text) return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "cuda: out of memory");
    snprintf(text, n, "%s\n%s", prelude, source);
    kiln_status s = found.nvrtc ? with_nvrtc(cx, text, arch, out) : with_nvcc(cx, text, arch, out);
    free(text);
    if (s == KILN_OK && cache) kiln__disk_cache_put(cache, key, out->data, out->size);
    return s;
}
