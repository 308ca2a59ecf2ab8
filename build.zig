//! Builds wsp_ggml (whisper.rn's copy of ggml) as shared libraries.
//!
//!   zig build                 host: base library + every CPU variant of the host arch → zig-out/lib/
//!   zig build -Dcpu=native    host: base library + one CPU backend tuned for this machine
//!   zig build dist            every release target → zig-out/dist/<target>/
//!   zig build test            builds and runs the C smoke test natively
//!   zig build bench           the C benchmark driver (bench/driver.c) → zig-out/bin/wsp-bench
//!   zig build smoke-dist      smoke binaries for every target → zig-out/smoke/<target>/ (for qemu / wine)
//!   zig build whisper-driver  the C whisper driver (native/whisper/driver.c) → zig-out/bin/wsp-whisper-driver
//!   zig build score-probes    score-only CPU variants, one feature each (tests/cpu_variant.test.ts) → zig-out/score-probes/
//!   zig build rpc-upstream    llama.cpp's rpc-server (second pin) → zig-out/bin/wsp-rpc-server-upstream
//!   zig build llama-bench     llama.cpp's llama-bench (second pin) → zig-out/bin/wsp-llama-bench
//!   zig build whisper-cli     whisper.cpp's CLI (third pin) → zig-out/bin/wsp-whisper-cli
//!   zig build rpc-client      the C RPC client (native/rpc/client.c) → zig-out/bin/wsp-rpc-client
//!
//! Layout of one target folder:
//!   libwsp-ggml.so | libwsp-ggml.dylib | wsp-ggml.dll     ggml core, alloc, backend registry, gguf, opt
//!   libggml-cpu-<variant>.so | ggml-cpu-<variant>.dll      one CPU backend per instruction-set level
//!   libggml-vulkan.so | ggml-vulkan.dll                    the Vulkan backend (Linux, Windows), when the
//!                                                          shaders are generated: node scripts/vulkan_shaders.mjs
//!   libwsp-whisper.so | libwsp-whisper.dylib | wsp-whisper.dll
//!                                                          whisper.cpp + the job shim (native/whisper/), linked
//!                                                          against libwsp-ggml (one backend registry)
//!
//! The CPU backend is built in several variants and picked at load time by ggml's own
//! dynamic-backend mechanism (WSP_GGML_BACKEND_DL): every variant exports
//! `wsp_ggml_backend_score`, which returns 0 when the CPU lacks a feature the variant was
//! compiled with, and the loader keeps the highest score.
//!
//! Run `node scripts/vendor.mjs` first: it lays the pinned sources out under vendor/ggml/.
const std = @import("std");

const vendor = "vendor/ggml";
/// whisper.cpp, whisper.h, whisper-arch.h (scripts/vendor.mjs lays them out beside ggml).
const whisper_vendor = "vendor/whisper";

/// Release targets of `zig build dist`: folder name → zig target triple.
/// Linux glibc builds keep a glibc 2.17 floor so they load on old distributions.
const dist_targets = [_]struct { name: []const u8, triple: []const u8 }{
    .{ .name = "linux-x64", .triple = "x86_64-linux-gnu.2.17" },
    .{ .name = "linux-arm64", .triple = "aarch64-linux-gnu.2.17" },
    .{ .name = "linux-x64-musl", .triple = "x86_64-linux-musl" },
    .{ .name = "linux-arm64-musl", .triple = "aarch64-linux-musl" },
    .{ .name = "darwin-x64", .triple = "x86_64-macos.11.0" },
    .{ .name = "darwin-arm64", .triple = "aarch64-macos.11.0" },
    .{ .name = "win32-x64", .triple = "x86_64-windows-gnu" },
};

/// A CPU backend variant: the zig CPU model (with features) it is compiled for, and the
/// WSP_GGML_* macros that make its `wsp_ggml_backend_score` demand those features at run time.
const Variant = struct {
    name: []const u8,
    cpu: []const u8,
    features: []const []const u8,
};

// x86-64: the levels ggml upstream ships with GGML_CPU_ALL_VARIANTS (less AMX, which
// needs sapphirerapids-class CPUs and doubles the build time for a server-only path).
const x86_variants = [_]Variant{
    .{ .name = "x64", .cpu = "x86_64", .features = &.{} },
    .{ .name = "sse42", .cpu = "x86_64_v2", .features = &.{"SSE42"} },
    .{ .name = "sandybridge", .cpu = "x86_64_v2+avx", .features = &.{ "SSE42", "AVX" } },
    .{ .name = "haswell", .cpu = "x86_64_v3", .features = &.{ "SSE42", "AVX", "F16C", "AVX2", "BMI2", "FMA" } },
    .{ .name = "alderlake", .cpu = "x86_64_v3+avxvnni", .features = &.{ "SSE42", "AVX", "F16C", "AVX2", "BMI2", "FMA", "AVX_VNNI" } },
    .{ .name = "skylakex", .cpu = "x86_64_v4", .features = &.{ "SSE42", "AVX", "F16C", "AVX2", "BMI2", "FMA", "AVX512" } },
    .{ .name = "icelake", .cpu = "x86_64_v4+avx512vbmi+avx512vnni", .features = &.{ "SSE42", "AVX", "F16C", "AVX2", "BMI2", "FMA", "AVX512", "AVX512_VBMI", "AVX512_VNNI" } },
};

// Intel Macs that run macOS 11 (the floor of darwin-x64) all have AVX; none has Alder Lake.
const x86_apple_variants = [_]Variant{ x86_variants[2], x86_variants[3], x86_variants[5], x86_variants[6] };

// arm64 Linux: ARMv8.0 baseline, + dotprod/fp16 (ARMv8.2, e.g. Cortex-A76, Graviton2),
// + i8mm (ARMv8.6, e.g. Graviton3, Ampere One).
const arm_linux_variants = [_]Variant{
    .{ .name = "armv8.0", .cpu = "generic", .features = &.{} },
    .{ .name = "armv8.2", .cpu = "generic+dotprod+fullfp16", .features = &.{ "USE_DOTPROD", "USE_FP16_VECTOR_ARITHMETIC" } },
    .{ .name = "armv8.6", .cpu = "generic+dotprod+fullfp16+i8mm", .features = &.{ "USE_DOTPROD", "USE_FP16_VECTOR_ARITHMETIC", "USE_MATMUL_INT8" } },
};

// Apple silicon: M1 has dotprod and fp16; M2 and later add i8mm.
const arm_apple_variants = [_]Variant{
    .{ .name = "apple_m1", .cpu = "apple_m1", .features = &.{ "USE_DOTPROD", "USE_FP16_VECTOR_ARITHMETIC" } },
    .{ .name = "apple_m2", .cpu = "apple_m2", .features = &.{ "USE_DOTPROD", "USE_FP16_VECTOR_ARITHMETIC", "USE_MATMUL_INT8" } },
};

const base_sources = [_][]const u8{
    "ggml.c",               "ggml-alloc.c",    "ggml-quants.c",
    "ggml-backend.cpp",     "ggml-backend-reg.cpp",
    "ggml-threading.cpp",   "gguf.cpp",        "ggml-opt.cpp",
};

const cpu_sources = [_][]const u8{
    "ggml-cpu/ggml-cpu.c",    "ggml-cpu/ggml-cpu.cpp", "ggml-cpu/binary-ops.cpp",
    "ggml-cpu/unary-ops.cpp", "ggml-cpu/ops.cpp",      "ggml-cpu/vec.cpp",
    "ggml-cpu/quants.c",      "ggml-cpu/repack.cpp",   "ggml-cpu/traits.cpp",
    "ggml-cpu/amx/amx.cpp",   "ggml-cpu/amx/mmq.cpp",
    // llamafile's sgemm (second pin), on in every variant as upstream's default build has it.
    "ggml-cpu/llamafile/sgemm.cpp",
};

const metal_sources = [_][]const u8{
    "ggml-metal/ggml-metal.cpp",        "ggml-metal/ggml-metal-common.cpp",
    "ggml-metal/ggml-metal-device.cpp", "ggml-metal/ggml-metal-ops.cpp",
};
const metal_objc_sources = [_][]const u8{
    "ggml-metal/ggml-metal-device.m", "ggml-metal/ggml-metal-context.m",
};

/// Generated by codegen (`deno task codegen`): pointer wrappers for by-value structs and
/// layout probes. Compiled in when present, so the native build works before codegen runs.
const base_shim = "native/shim/base.gen.c";
const cpu_shim = "native/shim/cpu.gen.c";
const num_base_shim = "native/shim/num_base.gen.c";
const num_cpu_shim = "native/shim/num_cpu.gen.c";
const whisper_shim = "native/shim/whisper.gen.c";

// -fno-sanitize=undefined: Debug/ReleaseSafe C code would otherwise trap (SIGILL) on the
// UB that ggml relies on. ggml's WSP_GGML_ASSERT checks stay on in every mode (they do not
// depend on NDEBUG); NDEBUG only drops the plain assert()s in hot loops, as upstream's
// release builds do.
const common_c_flags = [_][]const u8{ "-std=c11", "-fno-sanitize=undefined", "-fno-strict-aliasing" };
const common_cxx_flags = [_][]const u8{ "-std=c++17", "-fno-sanitize=undefined", "-fno-strict-aliasing" };
// The base library's C code may be unwound through: the RPC server's abort callback throws on
// the thread that serves a client (native/rpc_guard.cpp).
const base_c_flags = common_c_flags ++ [_][]const u8{"-fexceptions"};

const Options = struct {
    optimize: std.builtin.OptimizeMode,
    macos_sdk: ?[]const u8,
    metal_shaders: ?[]const u8,
    /// Comma-separated subset of the CPU variants to build (default: all of the arch).
    variants: ?[]const u8,
    /// llamafile's sgemm in the CPU variants (default on, as upstream; off only for bench/llamafile.mjs).
    llamafile: bool,
    /// The folder scripts/vulkan_shaders.mjs generated (shaders + include/ with the Vulkan
    /// headers): builds the Vulkan backend for the targets in `vulkanTarget`.
    vulkan: ?[]const u8,
};

pub fn build(b: *std.Build) !void {
    try checkZigVersion(b);
    const target = b.standardTargetOptions(.{});
    const opts = Options{
        .optimize = b.option(std.builtin.OptimizeMode, "optimize", "Optimization mode (default ReleaseFast)") orelse .ReleaseFast,
        .macos_sdk = b.option([]const u8, "macos-sdk", "Path to a macOS SDK: enables the Metal backend for macOS targets"),
        .metal_shaders = b.option([]const u8, "metal-shaders", "Path to another ggml-metal.metal to embed in the Metal backend (default: the second pin's, in vendor/ggml/ggml-metal/)"),
        .variants = b.option([]const u8, "variants", "Comma-separated CPU variants to build, e.g. x64,haswell (default: all)"),
        .llamafile = b.option(bool, "llamafile", "llamafile's sgemm in the CPU backend (default true)") orelse true,
        .vulkan = vulkanOption(b),
    };
    if (!pathExists(b, vendor ++ "/ggml.h")) {
        std.debug.print("error: {s}/ is missing: run `node scripts/vendor.mjs` (after `npm ci`) first\n", .{vendor});
        return error.VendorTreeMissing;
    }

    // Host build: a native -Dcpu gives one tuned CPU backend, otherwise every variant.
    const host_dir: std.Build.InstallDir = .lib;
    const native_cpu = target.query.cpu_model == .native;
    const host = try addTarget(b, target, host_dir, opts, native_cpu);
    for (host.steps.items) |s| b.getInstallStep().dependOn(s);

    // zig build test: the smoke program against the host libraries.
    const smoke = addSmoke(b, target, host.base, opts.optimize);
    const smoke_install = b.addInstallArtifact(smoke, .{ .dest_dir = .{ .override = host_dir } });
    const run_smoke = b.addSystemCommand(&.{b.getInstallPath(host_dir, smoke.out_filename)});
    run_smoke.addArg(b.getInstallPath(host_dir, ""));
    run_smoke.step.dependOn(&smoke_install.step);
    run_smoke.step.dependOn(b.getInstallStep());
    run_smoke.expectExitCode(0);
    b.step("test", "Build and run the C smoke test on the host").dependOn(&run_smoke.step);

    // zig build bench: the C reference of bench/ (ReleaseFast, like the libraries), linked against
    // the host base library; it finds libwsp-ggml in ../lib by rpath and takes the variants' folder.
    const bench_mod = b.createModule(.{ .target = target, .optimize = opts.optimize, .strip = opts.optimize != .Debug, .link_libc = true });
    bench_mod.addIncludePath(b.path(vendor));
    bench_mod.addCSourceFile(.{ .file = b.path("bench/driver.c"), .flags = &common_c_flags });
    bench_mod.addCSourceFile(.{ .file = b.path("bench/work.c"), .flags = &common_c_flags });
    bench_mod.linkLibrary(host.base);
    if (target.result.os.tag == .linux) {
        bench_mod.addRPathSpecial("$ORIGIN/../lib");
        bench_mod.linkSystemLibrary("dl", .{});
    }
    const bench_exe = b.addExecutable(.{ .name = "wsp-bench", .root_module = bench_mod });
    const bench_step = b.step("bench", "Build the C benchmark driver (bench/driver.c) into zig-out/bin/");
    bench_step.dependOn(&b.addInstallArtifact(bench_exe, .{}).step);
    // The same timed work as a library the TS cases load, to time C beside the binding in one
    // process (bench/work.h); in zig-out/bench/ so that nothing takes it for part of the product.
    const bench_dir: std.Build.Step.InstallArtifact.Options = .{ .dest_dir = .{ .override = .{ .custom = "bench" } } };
    const work_lib = benchLibrary(b, target, opts.optimize, host.base, "wsp-bench-work", "bench/work.c");
    bench_step.dependOn(&b.addInstallArtifact(work_lib, bench_dir).step);
    // The Node-API probe (bench/napi_probe.c): what an addon of our own would gain over koffi.
    // Its napi_* symbols resolve against the node process that loads it. Built where npm has
    // installed the headers (devDependency node-api-headers), on Linux and macOS hosts (Windows
    // would need an import library for node.exe).
    const napi_include = "node_modules/node-api-headers/include";
    const has_napi = if (b.build_root.handle.access(napi_include ++ "/node_api.h", .{})) |_| true else |_| false;
    if (has_napi and (target.result.os.tag == .linux or target.result.os.tag.isDarwin())) {
        const probe = benchLibrary(b, target, opts.optimize, host.base, "wsp-napi-probe", "bench/napi_probe.c");
        probe.root_module.addIncludePath(b.path(napi_include));
        probe.linker_allow_shlib_undefined = true;
        bench_step.dependOn(&b.addInstallArtifact(probe, bench_dir).step);
    }
    bench_step.dependOn(b.getInstallStep());

    // zig build whisper-driver: the C reference of the whisper bindings (transcript and timing),
    // linked against the host libraries, which it finds in ../lib by rpath.
    const wd_mod = whisperProgram(b, target, opts.optimize, host.base, host.whisper, false);
    wd_mod.addCSourceFile(.{ .file = b.path("native/whisper/driver.c"), .flags = &common_c_flags });
    const wd_exe = b.addExecutable(.{ .name = "wsp-whisper-driver", .root_module = wd_mod });
    const wd_step = b.step("whisper-driver", "Build the C whisper driver (native/whisper/driver.c) into zig-out/bin/");
    wd_step.dependOn(&b.addInstallArtifact(wd_exe, .{}).step);
    wd_step.dependOn(b.getInstallStep());

    // zig build score-probes: score-only CPU "variants" (cpu-feats.cpp with one feature macro,
    // no kernels) into zig-out/score-probes/, so that tests/cpu_variant.test.ts can name one that
    // this CPU lacks and see the loader refuse it on any machine.
    const probes_step = b.step("score-probes", "Score-only CPU variants (one feature each) into zig-out/score-probes/");
    const probe_feats: []const []const u8 = switch (target.result.cpu.arch) {
        .x86_64 => &.{ "AVX2", "AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16", "AMX_INT8" },
        .aarch64 => &.{ "USE_DOTPROD", "USE_MATMUL_INT8", "USE_SVE", "USE_SVE2", "USE_SME" },
        else => &.{},
    };
    const probe_target = try withCpu(b, target, baselineCpu(target.result));
    const probe_dir: std.Build.InstallDir = .{ .custom = "score-probes" };
    for (probe_feats) |f| {
        const pm = b.createModule(.{ .target = probe_target, .optimize = opts.optimize, .strip = true, .link_libc = true, .link_libcpp = true });
        addCommon(b, pm, target.result.os.tag);
        pm.addCMacro(b.fmt("WSP_GGML_{s}", .{f}), "1");
        const arch_dir = if (target.result.cpu.arch == .x86_64) "ggml-cpu/arch/x86" else "ggml-cpu/arch/arm";
        pm.addCSourceFile(.{ .file = b.path(b.fmt("{s}/{s}/cpu-feats.cpp", .{ vendor, arch_dir })), .flags = &common_cxx_flags });
        const name = b.fmt("needs-{s}", .{std.ascii.allocLowerString(b.allocator, f) catch @panic("OOM")});
        const lib = b.addLibrary(.{ .linkage = .dynamic, .name = b.fmt("ggml-cpu-{s}", .{name}), .root_module = pm });
        probes_step.dependOn(install(b, lib, probe_dir, backendFileName(b, target.result.os.tag, b.fmt("cpu-{s}", .{name}))));
    }

    // zig build rpc-upstream / rpc-client: the interop peers of tests/rpc_interop.test.ts —
    // llama.cpp's own rpc-server program (second pin, vendor/llama-tools/) and a small C client —
    // linked against the host base library, which loads the CPU variants from ../lib.
    const rpc_up_step = b.step("rpc-upstream", "llama.cpp's rpc-server (native/rpc/upstream_server.cpp) into zig-out/bin/wsp-rpc-server-upstream");
    if (pathExists(b, "vendor/llama-tools/rpc/rpc-server.cpp")) {
        const up = rpcPeer(b, target, opts.optimize, host.base, "wsp-rpc-server-upstream", "native/rpc/upstream_server.cpp");
        up.root_module.addIncludePath(b.path("vendor/llama-tools"));
        rpc_up_step.dependOn(&b.addInstallArtifact(up, .{}).step);
    } else {
        rpc_up_step.dependOn(&b.addFail("vendor/llama-tools/rpc/rpc-server.cpp is missing: run `node scripts/vendor.mjs`").step);
    }
    rpc_up_step.dependOn(b.getInstallStep());
    const rpc_client_step = b.step("rpc-client", "The C RPC client (native/rpc/client.c) into zig-out/bin/wsp-rpc-client");
    rpc_client_step.dependOn(&b.addInstallArtifact(rpcPeer(b, target, opts.optimize, host.base, "wsp-rpc-client", "native/rpc/client.c"), .{}).step);
    rpc_client_step.dependOn(b.getInstallStep());

    // zig build llama-bench: llama.cpp b6673's llama-bench (second pin, vendor/llama/), the
    // reference side of bench/llm_run.mjs. llama.cpp's own code is compiled into the program; its
    // ggml is the host base library and CPU variants of the default build (same sources, same
    // flags), found in ../lib by rpath and loaded through ggml's registry. Nothing else depends on it.
    const llama_bench_step = b.step("llama-bench", "llama.cpp's llama-bench (native/llama/bench.cpp) into zig-out/bin/wsp-llama-bench");
    if (pathExists(b, "vendor/llama/tools/llama-bench/llama-bench.cpp")) {
        const lb = llamaBench(b, target, opts.optimize, host.base);
        llama_bench_step.dependOn(&b.addInstallArtifact(lb, .{}).step);
    } else {
        llama_bench_step.dependOn(&b.addFail("vendor/llama/ is missing: run `node scripts/vendor.mjs`").step);
    }
    llama_bench_step.dependOn(b.getInstallStep());

    // zig build whisper-cli: whisper.cpp's own CLI program (third pin, vendor/whisper-cli/), the
    // reference side of bench/whisper_run.mjs, linked against the host libwsp-whisper and
    // libwsp-ggml (found in ../lib by rpath, as the C driver). Nothing else depends on it.
    const wcli_step = b.step("whisper-cli", "whisper.cpp's CLI (native/whisper/cli.cpp) into zig-out/bin/wsp-whisper-cli");
    if (pathExists(b, "vendor/whisper-cli/cli/cli.cpp")) {
        const mod = whisperProgram(b, target, opts.optimize, host.base, host.whisper, true);
        mod.addIncludePath(b.path("vendor/whisper-cli"));
        mod.addCSourceFiles(.{ .root = b.path("vendor/whisper-cli"), .files = &.{ "common.cpp", "common-whisper.cpp", "grammar-parser.cpp" }, .flags = &common_cxx_flags });
        mod.addCSourceFile(.{ .file = b.path("native/whisper/cli.cpp"), .flags = &common_cxx_flags });
        wcli_step.dependOn(&b.addInstallArtifact(b.addExecutable(.{ .name = "wsp-whisper-cli", .root_module = mod }), .{}).step);
    } else {
        wcli_step.dependOn(&b.addFail("vendor/whisper-cli/ is missing: run `node scripts/vendor.mjs`").step);
    }
    wcli_step.dependOn(b.getInstallStep());

    // zig build dist / smoke-dist: every release target, cross-compiled from this machine.
    const dist = b.step("dist", "Cross-compile every release target into zig-out/dist/<target>/");
    const smoke_dist = b.step("smoke-dist", "Smoke binaries of every target into zig-out/smoke/<target>/");
    for (dist_targets) |t| {
        const resolved = b.resolveTargetQuery(try std.Target.Query.parse(.{ .arch_os_abi = t.triple }));
        const dir: std.Build.InstallDir = .{ .custom = b.fmt("dist/{s}", .{t.name}) };
        const built = try addTarget(b, resolved, dir, opts, false);
        for (built.steps.items) |s| dist.dependOn(s);

        const exe = addSmoke(b, resolved, built.base, opts.optimize);
        // The smoke binary looks for the libraries in ../../dist/<target>/ by rpath.
        if (resolved.result.os.tag == .linux) exe.root_module.addRPathSpecial(b.fmt("$ORIGIN/../../dist/{s}", .{t.name}));
        const inst = b.addInstallArtifact(exe, .{ .dest_dir = .{ .override = .{ .custom = b.fmt("smoke/{s}", .{t.name}) } }, .pdb_dir = .disabled });
        smoke_dist.dependOn(&inst.step);
        for (built.steps.items) |s| smoke_dist.dependOn(s);
    }

    // zig build metal-embed: the part of the Metal backend that needs no macOS SDK (the merged
    // shader source and the object that embeds it, for both Mac architectures), so CI checks it.
    const embed_step = b.step("metal-embed", "The embedded Metal shader (merged source + Mach-O objects) into zig-out/metal-embed/");
    const embed = metalEmbed(b, opts);
    embed_step.dependOn(&b.addInstallFile(embed.source, "metal-embed/ggml-metal-embed.metal").step);
    for ([_][]const u8{ "aarch64-macos.11.0", "x86_64-macos.11.0" }) |triple| {
        const t = b.resolveTargetQuery(try std.Target.Query.parse(.{ .arch_os_abi = triple }));
        const mod = b.createModule(.{ .target = t, .optimize = opts.optimize });
        mod.addAssemblyFile(embed.asm_file);
        const obj = b.addObject(.{ .name = "ggml-metal-embed", .root_module = mod });
        embed_step.dependOn(&b.addInstallFile(obj.getEmittedBin(), b.fmt("metal-embed/{s}/ggml-metal-embed.o", .{@tagName(t.result.cpu.arch)})).step);
    }
}

/// The Metal shader source as the backend compiles it at run time, from memory, where its
/// includes cannot resolve: ggml-common.h and ggml-metal-impl.h pasted in at the lines that
/// name them, as upstream's GGML_METAL_EMBED_LIBRARY build does; and the assembly that embeds
/// it between wsp_ggml_metallib_start and wsp_ggml_metallib_end.
fn metalEmbed(b: *std.Build, opts: Options) struct { source: std.Build.LazyPath, asm_file: std.Build.LazyPath } {
    const read = struct {
        fn f(bb: *std.Build, path: []const u8) []const u8 {
            return std.fs.cwd().readFileAlloc(bb.allocator, bb.pathFromRoot(path), 64 << 20) catch |e|
                std.debug.panic("metal-embed: cannot read {s}: {s} (run `node scripts/vendor.mjs`)", .{ path, @errorName(e) });
        }
    }.f;
    const shader = read(b, opts.metal_shaders orelse vendor ++ "/ggml-metal/ggml-metal.metal");
    const common = read(b, vendor ++ "/ggml-common.h");
    const impl = read(b, vendor ++ "/ggml-metal/ggml-metal-impl.h");
    var merged: std.ArrayList(u8) = .empty;
    var pasted: u8 = 0;
    var lines = std.mem.splitScalar(u8, shader, '\n');
    var first = true;
    while (lines.next()) |line| {
        if (!first) merged.append(b.allocator, '\n') catch @panic("OOM");
        first = false;
        const trimmed = std.mem.trim(u8, line, " \t\r");
        if (std.mem.eql(u8, trimmed, "__embed_ggml-common.h__")) {
            merged.appendSlice(b.allocator, std.mem.trimRight(u8, common, "\n")) catch @panic("OOM");
            pasted |= 1;
        } else if (std.mem.eql(u8, trimmed, "#include \"ggml-metal-impl.h\"")) {
            merged.appendSlice(b.allocator, std.mem.trimRight(u8, impl, "\n")) catch @panic("OOM");
            pasted |= 2;
        } else merged.appendSlice(b.allocator, line) catch @panic("OOM");
    }
    if (pasted != 3) std.debug.panic("metal-embed: the shader source lacks the marker lines for ggml-common.h / ggml-metal-impl.h", .{});
    const wf = b.addWriteFiles();
    const source = wf.add("ggml-metal-embed.metal", merged.items);
    // .incbin resolves against the assembler's working directory; the bytes go in as data instead.
    var asm_text: std.ArrayList(u8) = .empty;
    asm_text.appendSlice(b.allocator, ".section __DATA,__ggml_metallib\n.globl _wsp_ggml_metallib_start\n_wsp_ggml_metallib_start:\n") catch @panic("OOM");
    var i: usize = 0;
    while (i < merged.items.len) : (i += 64) {
        const chunk = merged.items[i..@min(i + 64, merged.items.len)];
        asm_text.appendSlice(b.allocator, ".byte ") catch @panic("OOM");
        for (chunk, 0..) |c, k| asm_text.appendSlice(b.allocator, b.fmt("{s}{d}", .{ if (k == 0) "" else ",", c })) catch @panic("OOM");
        asm_text.append(b.allocator, '\n') catch @panic("OOM");
    }
    asm_text.appendSlice(b.allocator, ".globl _wsp_ggml_metallib_end\n_wsp_ggml_metallib_end:\n") catch @panic("OOM");
    return .{ .source = source, .asm_file = wf.add("ggml-metal-embed.s", asm_text.items) };
}

const Built = struct { base: *std.Build.Step.Compile, whisper: *std.Build.Step.Compile, steps: std.ArrayList(*std.Build.Step) };

/// Adds the base library and the CPU backend variants (and Metal where possible) of one target.
fn addTarget(b: *std.Build, target: std.Build.ResolvedTarget, dir: std.Build.InstallDir, opts: Options, native_cpu: bool) !Built {
    var steps: std.ArrayList(*std.Build.Step) = .empty;
    const os = target.result.os.tag;
    const arch = target.result.cpu.arch;

    // The base library is compiled for the architecture's baseline CPU: it holds no hot
    // loops, and it must load on every CPU the variants cover.
    const base_target = if (native_cpu) target else try withCpu(b, target, baselineCpu(target.result));
    const base_mod = b.createModule(.{ .target = base_target, .optimize = opts.optimize, .strip = opts.optimize != .Debug, .link_libc = true, .link_libcpp = true });
    addCommon(b, base_mod, os);
    // whisper.rn's flattened ggml-quants.c includes "ggml-cpu-impl.h" for its SIMD macros.
    base_mod.addIncludePath(b.path(vendor ++ "/ggml-cpu"));
    base_mod.addCMacro("WSP_GGML_BUILD", "1");
    base_mod.addCSourceFiles(.{ .root = b.path(vendor), .files = cFiles(&base_sources), .flags = &base_c_flags });
    base_mod.addCSourceFiles(.{ .root = b.path(vendor), .files = cxxFiles(&base_sources), .flags = &common_cxx_flags });
    if (pathExists(b, base_shim)) base_mod.addCSourceFile(.{ .file = b.path(base_shim), .flags = &common_c_flags });
    if (pathExists(b, num_base_shim)) base_mod.addCSourceFile(.{ .file = b.path(num_base_shim), .flags = &common_c_flags });
    base_mod.addCSourceFile(.{ .file = b.path("native/pin.c"), .flags = &common_c_flags });
    // wsp-ggml's log routing (JS thread vs native threads) and abort message.
    base_mod.addCSourceFile(.{ .file = b.path("native/log.c"), .flags = &common_c_flags });
    // CPU time, cores and memory for the thread policy and memory checks (src/runtime/machine.ts).
    base_mod.addCSourceFile(.{ .file = b.path("native/machine.c"), .flags = &common_c_flags });
    if (os == .windows) base_mod.addCSourceFile(.{ .file = b.path("native/win-exports.c"), .flags = &common_c_flags });
    // ggml's RPC backend (vendor/ggml/ggml-rpc.cpp, included by the guard that turns its aborts
    // into errors): in the base library, like the registry it is reached from.
    base_mod.addCSourceFile(.{ .file = b.path("native/rpc_guard.cpp"), .flags = &common_cxx_flags });
    if (os == .windows) base_mod.linkSystemLibrary("ws2_32", .{});
    const base = b.addLibrary(.{ .linkage = .dynamic, .name = "wsp-ggml", .root_module = base_mod });
    try steps.append(b.allocator, install(b, base, dir, null));

    const variants: []const Variant = if (native_cpu)
        &.{.{ .name = "native", .cpu = "native", .features = &.{} }}
    else switch (arch) {
        .x86_64 => if (os == .macos) &x86_apple_variants else &x86_variants,
        .aarch64 => if (os == .macos) &arm_apple_variants else &arm_linux_variants,
        else => {
            std.debug.print("error: no CPU variants for {s}: only x86_64 and aarch64 code is vendored\n", .{@tagName(arch)});
            return error.UnsupportedArch;
        },
    };
    for (variants) |v| {
        if (opts.variants) |only| if (!listHas(only, v.name)) continue;
        const vt = if (native_cpu) target else try withCpu(b, target, v.cpu);
        const mod = b.createModule(.{ .target = vt, .optimize = opts.optimize, .strip = opts.optimize != .Debug, .link_libc = true, .link_libcpp = true });
        addCommon(b, mod, os);
        mod.addIncludePath(b.path(vendor ++ "/ggml-cpu"));
        mod.addCMacro("WSP_GGML_USE_CPU_REPACK", "1");
        if (opts.llamafile) mod.addCMacro("WSP_GGML_USE_LLAMAFILE", "1");
        for (v.features) |f| mod.addCMacro(b.fmt("WSP_GGML_{s}", .{f}), "1");
        mod.addCMacro("WSP_GGML_CPU_VARIANT_NAME", b.fmt("\"{s}\"", .{v.name}));
        const arch_dir = if (arch == .x86_64) "ggml-cpu/arch/x86" else "ggml-cpu/arch/arm";
        const arch_files = [_][]const u8{ b.fmt("{s}/quants.c", .{arch_dir}), b.fmt("{s}/repack.cpp", .{arch_dir}) };
        // The score function runs on CPUs the variant cannot run on, so it must not contain
        // the variant's instructions: cpu-feats.cpp is compiled for the baseline CPU, with
        // the variant's feature macros (upstream does the same with a separate object library).
        const feats_mod = b.createModule(.{ .target = base_target, .optimize = opts.optimize, .strip = opts.optimize != .Debug, .pic = true, .link_libc = true, .link_libcpp = true });
        addCommon(b, feats_mod, os);
        for (v.features) |f| feats_mod.addCMacro(b.fmt("WSP_GGML_{s}", .{f}), "1");
        feats_mod.addCSourceFile(.{ .file = b.path(b.fmt("{s}/{s}/cpu-feats.cpp", .{ vendor, arch_dir })), .flags = &common_cxx_flags });
        mod.addObject(b.addObject(.{ .name = b.fmt("ggml-cpu-{s}-feats", .{v.name}), .root_module = feats_mod }));
        mod.addCSourceFiles(.{ .root = b.path(vendor), .files = cFiles(&cpu_sources), .flags = &common_c_flags });
        mod.addCSourceFiles(.{ .root = b.path(vendor), .files = cxxFiles(&cpu_sources), .flags = &common_cxx_flags });
        mod.addCSourceFiles(.{ .root = b.path(vendor), .files = b.allocator.dupe([]const u8, cFiles(&arch_files)) catch @panic("OOM"), .flags = &common_c_flags });
        mod.addCSourceFiles(.{ .root = b.path(vendor), .files = b.allocator.dupe([]const u8, cxxFiles(&arch_files)) catch @panic("OOM"), .flags = &common_cxx_flags });
        mod.addCSourceFile(.{ .file = b.path("native/cpu-variant.c"), .flags = &common_c_flags });
        mod.addCSourceFile(.{ .file = b.path("native/pin.c"), .flags = &common_c_flags });
        if (pathExists(b, cpu_shim)) mod.addCSourceFile(.{ .file = b.path(cpu_shim), .flags = &common_c_flags });
        if (pathExists(b, num_cpu_shim)) mod.addCSourceFile(.{ .file = b.path(num_cpu_shim), .flags = &common_c_flags });
        mod.linkLibrary(base);
        addLoaderRPath(mod, os);
        const lib = b.addLibrary(.{ .linkage = .dynamic, .name = b.fmt("ggml-cpu-{s}", .{v.name}), .root_module = mod });
        try steps.append(b.allocator, install(b, lib, dir, backendFileName(b, os, b.fmt("cpu-{s}", .{v.name}))));
    }

    if (os == .macos) {
        if (try addMetal(b, target, base, opts)) |metal| try steps.append(b.allocator, install(b, metal, dir, backendFileName(b, os, "metal")));
    }
    if (opts.vulkan) |gen| if (vulkanTarget(target.result)) {
        try steps.append(b.allocator, install(b, addVulkan(b, base_target, base, opts.optimize, gen), dir, backendFileName(b, os, "vulkan")));
    };
    const whisper = addWhisper(b, base_target, base, opts.optimize);
    try steps.append(b.allocator, install(b, whisper, dir, null));
    return .{ .base = base, .whisper = whisper, .steps = steps };
}

/// libwsp-whisper: whisper.cpp, the job shim and the generated whisper shim, linked against the
/// base library so that it shares ggml's backend registry (the CPU variant and Vulkan loaded at
/// run time). Compiled once per target for the baseline CPU like the base library: whisper.cpp
/// builds graphs and samples tokens, the hot loops run in the CPU variants.
fn addWhisper(b: *std.Build, target: std.Build.ResolvedTarget, base: *std.Build.Step.Compile, optimize: std.builtin.OptimizeMode) *std.Build.Step.Compile {
    const os = target.result.os.tag;
    const mod = b.createModule(.{ .target = target, .optimize = optimize, .strip = optimize != .Debug, .link_libc = true, .link_libcpp = true });
    addCommon(b, mod, os);
    addWhisperIncludes(b, mod);
    // WHISPER_API: visibility("default"), and dllexport on Windows, where it also turns MinGW's
    // auto-export (and with it the CRT's atexit clash of native/win-exports.c) off.
    mod.addCMacro("WHISPER_SHARED", "1");
    mod.addCMacro("WHISPER_BUILD", "1");
    if (os == .windows) {
        // whisper.cpp marks its logger gnu_printf under MinGW, which clang rejects (ggml.h checks
        // for clang; whisper.cpp does not); and M_PI needs _USE_MATH_DEFINES under -std=c++17.
        mod.addCMacro("gnu_printf", "printf");
        mod.addCMacro("_USE_MATH_DEFINES", "1");
    }
    // Hidden but for WHISPER_API: libc++'s template code that whisper.cpp instantiates (std::ifstream,
    // vectors, …) would otherwise be exported as weak symbols that the base library exports too,
    // and a program that links both binds whisper's to the base library's copy of libc++, whose
    // objects whisper's own inline code then frees ("double free or corruption" on a bad model).
    mod.addCSourceFile(.{ .file = b.path(whisper_vendor ++ "/whisper.cpp"), .flags = &(common_cxx_flags ++ [_][]const u8{"-fvisibility=hidden"}) });
    mod.addCSourceFile(.{ .file = b.path("native/whisper/job.c"), .flags = &common_c_flags });
    if (pathExists(b, whisper_shim)) mod.addCSourceFile(.{ .file = b.path(whisper_shim), .flags = &common_c_flags });
    mod.addCSourceFile(.{ .file = b.path("native/pin.c"), .flags = &common_c_flags });
    mod.linkLibrary(base);
    addLoaderRPath(mod, os);
    return b.addLibrary(.{ .linkage = .dynamic, .name = "wsp-whisper", .root_module = mod });
}

/// The module of a program that calls whisper.cpp (the C driver, whisper.cpp's CLI): whisper's
/// headers, linked against the host base and whisper libraries, found in ../lib by rpath.
fn whisperProgram(b: *std.Build, target: std.Build.ResolvedTarget, optimize: std.builtin.OptimizeMode, base: *std.Build.Step.Compile, whisper: *std.Build.Step.Compile, cxx: bool) *std.Build.Module {
    const mod = b.createModule(.{ .target = target, .optimize = optimize, .strip = optimize != .Debug, .link_libc = true, .link_libcpp = cxx });
    addCommon(b, mod, target.result.os.tag);
    addWhisperIncludes(b, mod);
    mod.addCMacro("WHISPER_SHARED", "1");
    mod.linkLibrary(base);
    mod.linkLibrary(whisper);
    if (target.result.os.tag == .linux) mod.addRPathSpecial("$ORIGIN/../lib");
    if (target.result.os.tag.isDarwin()) mod.addRPathSpecial("@loader_path/../lib");
    return mod;
}

fn addWhisperIncludes(b: *std.Build, mod: *std.Build.Module) void {
    mod.addIncludePath(b.path(whisper_vendor));
    mod.addIncludePath(b.path("native/whisper"));
}

/// The Metal backend, when an SDK is given, with the macOS shader source embedded: whisper.rn
/// deletes ggml-metal.metal (it ships iOS metallibs only), so it comes from the second pin.
fn addMetal(b: *std.Build, target: std.Build.ResolvedTarget, base: *std.Build.Step.Compile, opts: Options) !?*std.Build.Step.Compile {
    const sdk = opts.macos_sdk orelse {
        if (b.verbose) std.debug.print("note: {s}: Metal backend skipped (no -Dmacos-sdk); CPU backend only\n", .{@tagName(target.result.cpu.arch)});
        return null;
    };
    const mod = b.createModule(.{ .target = target, .optimize = opts.optimize, .strip = opts.optimize != .Debug, .link_libc = true, .link_libcpp = true });
    addCommon(b, mod, .macos);
    mod.addSystemIncludePath(.{ .cwd_relative = b.pathJoin(&.{ sdk, "usr/include" }) });
    mod.addFrameworkPath(.{ .cwd_relative = b.pathJoin(&.{ sdk, "System/Library/Frameworks" }) });
    mod.addLibraryPath(.{ .cwd_relative = b.pathJoin(&.{ sdk, "usr/lib" }) });
    mod.addIncludePath(b.path(vendor ++ "/ggml-metal"));
    mod.addCMacro("WSP_GGML_METAL_EMBED_LIBRARY", "1");
    mod.addCSourceFiles(.{ .root = b.path(vendor), .files = &metal_sources, .flags = &common_cxx_flags });
    mod.addCSourceFiles(.{ .root = b.path(vendor), .files = &metal_objc_sources, .flags = &.{ "-fobjc-arc", "-fno-sanitize=undefined" } });
    mod.addAssemblyFile(metalEmbed(b, opts).asm_file);
    for ([_][]const u8{ "Foundation", "Metal", "MetalKit" }) |fw| mod.linkFramework(fw, .{});
    mod.addCSourceFile(.{ .file = b.path("native/pin.c"), .flags = &common_c_flags });
    mod.linkLibrary(base);
    addLoaderRPath(mod, .macos);
    return b.addLibrary(.{ .linkage = .dynamic, .name = "ggml-metal", .root_module = mod });
}

/// -Dvulkan=DIR (the folder `node scripts/vulkan_shaders.mjs` prints) or -Dvulkan=off; by default
/// the folder the script last generated (.cache/vulkan-shaders/current, ignored by git), so that
/// every `zig build` after `npm run setup` / `npm run build` includes Vulkan, and none without it.
fn vulkanOption(b: *std.Build) ?[]const u8 {
    const given = b.option([]const u8, "vulkan", "Folder of generated Vulkan shaders (`node scripts/vulkan_shaders.mjs` prints it) or `off` (default: .cache/vulkan-shaders/current when present): builds libggml-vulkan for Linux and Windows targets");
    if (given) |v| return if (std.mem.eql(u8, v, "off")) null else v;
    const current = ".cache/vulkan-shaders/current";
    if (!pathExists(b, current ++ "/ggml-vulkan-shaders.S")) return null;
    if (!pathExists(b, current ++ "/include/vulkan/vulkan.hpp")) {
        std.debug.print("note: Vulkan backend skipped: the Vulkan headers are gone (install libvulkan-dev and run `node scripts/vulkan_shaders.mjs`)\n", .{});
        return null;
    }
    return b.pathFromRoot(current);
}

/// The Vulkan loader's functions that ggml-vulkan.cpp calls by name (`nm -u` of the library).
const vulkan_imports = [_][]const u8{ "vkGetInstanceProcAddr", "vkGetPhysicalDeviceFeatures2", "vkCmdCopyBuffer" };

/// Vulkan: Linux on x86_64 and aarch64 (glibc, and musl when vulkan_musl: ~18 CPU-seconds and
/// 27 MB per target, for Alpine's vulkan-loader; built and checked, not run on musl), Windows x86_64.
const vulkan_musl = true;
fn vulkanTarget(t: std.Target) bool {
    return switch (t.os.tag) {
        .linux => (t.cpu.arch == .x86_64 or t.cpu.arch == .aarch64) and (t.abi.isGnu() or (vulkan_musl and t.abi.isMusl())),
        .windows => t.cpu.arch == .x86_64,
        else => false,
    };
}

/// The Vulkan backend as a dynamic backend library (libggml-vulkan.so, ggml-vulkan.dll), from the
/// second pin's ggml-vulkan.cpp and the shaders in `gen` (scripts/vulkan_shaders.mjs: the SPIR-V
/// blob with its assembly, the pointer tables, and include/ with the Vulkan headers, which are
/// platform independent, so every target uses Debian's). It calls three functions of the Vulkan
/// loader directly (`vulkan_imports`; every other one comes through vulkan.hpp's dynamic
/// dispatcher), linked against a stub: on Linux a libvulkan.so.1 built here (never installed;
/// passed as a file, not linkLibrary, which would put its cache folder in the RUNPATH, where a
/// process run from the build root would load the stub) gives the DT_NEEDED; on Windows an import
/// library for vulkan-1.dll made from a .def by `zig dlltool`. So no sysroot is needed, and on a
/// machine without a Vulkan loader only this library fails to load.
fn addVulkan(b: *std.Build, target: std.Build.ResolvedTarget, base: *std.Build.Step.Compile, optimize: std.builtin.OptimizeMode, gen: []const u8) *std.Build.Step.Compile {
    const os = target.result.os.tag;
    const mod = b.createModule(.{ .target = target, .optimize = optimize, .strip = optimize != .Debug, .link_libc = true, .link_libcpp = true });
    addCommon(b, mod, os);
    mod.addIncludePath(.{ .cwd_relative = gen });
    mod.addSystemIncludePath(.{ .cwd_relative = b.pathJoin(&.{ gen, "include" }) });
    mod.addCSourceFile(.{ .file = b.path(vendor ++ "/ggml-vulkan/ggml-vulkan.cpp"), .flags = &common_cxx_flags });
    // The tables' generic names (add_data, mul_len, …) stay inside the library (ELF: hidden; the .S
    // keeps them and the shaders out of a DLL's auto-export list).
    mod.addCSourceFile(.{ .file = .{ .cwd_relative = b.pathJoin(&.{ gen, "ggml-vulkan-shaders.cpp" }) }, .flags = &(common_cxx_flags ++ [_][]const u8{"-fvisibility=hidden"}) });
    mod.addCSourceFile(.{ .file = .{ .cwd_relative = b.pathJoin(&.{ gen, "ggml-vulkan-shaders.S" }) }, .flags = &.{} });
    mod.addCSourceFile(.{ .file = b.path("native/pin.c"), .flags = &common_c_flags });
    mod.linkLibrary(base);
    addLoaderRPath(mod, os);
    const wf = b.addWriteFiles();
    var def_text: std.ArrayList(u8) = .empty;
    var stub_text: std.ArrayList(u8) = .empty;
    def_text.appendSlice(b.allocator, "LIBRARY vulkan-1.dll\nEXPORTS\n") catch @panic("OOM");
    for (vulkan_imports) |f| {
        def_text.appendSlice(b.allocator, b.fmt("{s}\n", .{f})) catch @panic("OOM");
        stub_text.appendSlice(b.allocator, b.fmt("void {s}(void) {{}}\n", .{f})) catch @panic("OOM");
    }
    if (os == .windows) {
        const def = wf.add("vulkan-1.def", def_text.items);
        const dlltool = b.addSystemCommand(&.{ b.graph.zig_exe, "dlltool", "-m", "i386:x86-64", "-d" });
        dlltool.addFileArg(def);
        dlltool.addArg("-l");
        mod.addObjectFile(dlltool.addOutputFileArg("libvulkan-1.a"));
    } else {
        const stub_mod = b.createModule(.{ .target = target, .optimize = .ReleaseSmall, .strip = true });
        stub_mod.addCSourceFile(.{ .file = wf.add("vulkan-stub.c", stub_text.items), .flags = &.{} });
        const stub = b.addLibrary(.{ .linkage = .dynamic, .name = "vulkan", .version = .{ .major = 1, .minor = 0, .patch = 0 }, .root_module = stub_mod });
        mod.addObjectFile(stub.getEmittedBin());
    }
    return b.addLibrary(.{ .linkage = .dynamic, .name = "ggml-vulkan", .root_module = mod });
}

fn addSmoke(b: *std.Build, target: std.Build.ResolvedTarget, base: *std.Build.Step.Compile, optimize: std.builtin.OptimizeMode) *std.Build.Step.Compile {
    const mod = b.createModule(.{ .target = target, .optimize = optimize, .strip = optimize != .Debug, .link_libc = true });
    mod.addIncludePath(b.path(vendor));
    mod.addCSourceFile(.{ .file = b.path("native/smoke/smoke.c"), .flags = &common_c_flags });
    mod.linkLibrary(base);
    addLoaderRPath(mod, target.result.os.tag);
    if (target.result.os.tag == .linux) mod.linkSystemLibrary("dl", .{});
    return b.addExecutable(.{ .name = "wsp-ggml-smoke", .root_module = mod });
}

fn addCommon(b: *std.Build, mod: *std.Build.Module, os: std.Target.Os.Tag) void {
    mod.addIncludePath(b.path(vendor));
    mod.addCMacro("NDEBUG", "1");
    mod.addCMacro("WSP_GGML_SHARED", "1");
    mod.addCMacro("WSP_GGML_BACKEND_SHARED", "1");
    mod.addCMacro("WSP_GGML_BACKEND_BUILD", "1");
    mod.addCMacro("WSP_GGML_BACKEND_DL", "1");
    mod.addCMacro("WSP_GGML_VERSION", "\"whisper.rn-0.5.1\"");
    mod.addCMacro("WSP_GGML_COMMIT", "\"85871a9\"");
    switch (os) {
        .linux => {
            mod.addCMacro("_GNU_SOURCE", "1");
        },
        .macos => {
            mod.addCMacro("_DARWIN_C_SOURCE", "1");
        },
        else => {},
    }
}

/// Variants find the base library beside themselves.
fn addLoaderRPath(mod: *std.Build.Module, os: std.Target.Os.Tag) void {
    switch (os) {
        .linux => mod.addRPathSpecial("$ORIGIN"),
        .macos => mod.addRPathSpecial("@loader_path"),
        else => {},
    }
}

fn install(b: *std.Build, lib: *std.Build.Step.Compile, dir: std.Build.InstallDir, name: ?[]const u8) *std.Build.Step {
    const inst = b.addInstallArtifact(lib, .{
        .dest_dir = .{ .override = dir },
        .implib_dir = .disabled,
        .pdb_dir = .disabled,
        .h_dir = .disabled,
        .dylib_symlinks = false,
        .dest_sub_path = name,
    });
    return &inst.step;
}

/// ggml's loader looks for `libggml-<name>.so` (also on macOS) and `ggml-<name>.dll`.
fn backendFileName(b: *std.Build, os: std.Target.Os.Tag, name: []const u8) []const u8 {
    return if (os == .windows) b.fmt("ggml-{s}.dll", .{name}) else b.fmt("libggml-{s}.so", .{name});
}

fn baselineCpu(t: std.Target) []const u8 {
    return switch (t.cpu.arch) {
        .x86_64 => "x86_64",
        .aarch64 => if (t.os.tag == .macos) "apple_m1" else "generic",
        else => "baseline",
    };
}

/// The same target with another CPU model and feature set ("model+feat+feat").
fn withCpu(b: *std.Build, target: std.Build.ResolvedTarget, cpu: []const u8) !std.Build.ResolvedTarget {
    const parsed = try std.Target.Query.parse(.{ .arch_os_abi = b.fmt("{s}-freestanding", .{@tagName(target.result.cpu.arch)}), .cpu_features = cpu });
    var q = target.query;
    q.cpu_arch = target.result.cpu.arch;
    q.cpu_model = parsed.cpu_model;
    q.cpu_features_add = parsed.cpu_features_add;
    q.cpu_features_sub = parsed.cpu_features_sub;
    return b.resolveTargetQuery(q);
}

fn cFiles(files: []const []const u8) []const []const u8 {
    return filterExt(files, ".c");
}
fn cxxFiles(files: []const []const u8) []const []const u8 {
    return filterExt(files, ".cpp");
}
fn filterExt(files: []const []const u8, ext: []const u8) []const []const u8 {
    var out = std.heap.page_allocator.alloc([]const u8, files.len) catch @panic("OOM");
    var n: usize = 0;
    for (files) |f| if (std.mem.endsWith(u8, f, ext)) {
        out[n] = f;
        n += 1;
    };
    return out[0..n];
}

fn listHas(list: []const u8, name: []const u8) bool {
    var it = std.mem.splitScalar(u8, list, ',');
    while (it.next()) |item| if (std.mem.eql(u8, std.mem.trim(u8, item, " "), name)) return true;
    return false;
}

fn pathExists(b: *std.Build, rel: []const u8) bool {
    b.build_root.handle.access(rel, .{}) catch return false;
    return true;
}

fn checkZigVersion(b: *std.Build) !void {
    _ = b;
    const want = std.SemanticVersion.parse("0.15.2") catch unreachable;
    const have = @import("builtin").zig_version;
    if (have.order(want) != .eq) {
        std.debug.print("error: this project builds with zig {f} exactly, this is zig {f}: run `node scripts/zig.mjs build …` (it installs the pinned zig)\n", .{ want, have });
        return error.WrongZigVersion;
    }
}

/// A host program of native/rpc/ (one C or C++ source) linked against the base library, which it
/// finds in ../lib by rpath (zig-out/bin/ beside zig-out/lib/).
fn rpcPeer(b: *std.Build, target: std.Build.ResolvedTarget, optimize: std.builtin.OptimizeMode, base: *std.Build.Step.Compile, name: []const u8, source: []const u8) *std.Build.Step.Compile {
    const mod = b.createModule(.{ .target = target, .optimize = optimize, .strip = optimize != .Debug, .link_libc = true, .link_libcpp = std.mem.endsWith(u8, source, ".cpp") });
    addCommon(b, mod, target.result.os.tag);
    const flags: []const []const u8 = if (std.mem.endsWith(u8, source, ".cpp")) &common_cxx_flags else &common_c_flags;
    mod.addCSourceFile(.{ .file = b.path(source), .flags = flags });
    mod.linkLibrary(base);
    switch (target.result.os.tag) {
        .linux => mod.addRPathSpecial("$ORIGIN/../lib"),
        .macos => mod.addRPathSpecial("@loader_path/../lib"),
        else => {},
    }
    return b.addExecutable(.{ .name = name, .root_module = mod });
}

/// A shared library of bench/ (one C source, linked against the host base library, which it
/// finds in ../lib by rpath); installed into zig-out/bench/ so that nothing takes it for part of
/// the product.
fn benchLibrary(b: *std.Build, target: std.Build.ResolvedTarget, optimize: std.builtin.OptimizeMode, base: *std.Build.Step.Compile, name: []const u8, source: []const u8) *std.Build.Step.Compile {
    const mod = b.createModule(.{ .target = target, .optimize = optimize, .strip = optimize != .Debug, .link_libc = true, .pic = true });
    mod.addIncludePath(b.path(vendor));
    mod.addCSourceFile(.{ .file = b.path(source), .flags = &common_c_flags });
    mod.linkLibrary(base);
    if (target.result.os.tag == .linux) mod.addRPathSpecial("$ORIGIN/../lib");
    if (target.result.os.tag.isDarwin()) mod.addRPathSpecial("@loader_path/../lib");
    return b.addLibrary(.{ .name = name, .linkage = .dynamic, .root_module = mod });
}

/// llama.cpp b6673 (src/, common's common.cpp and log.cpp) and its llama-bench tool, laid out in
/// vendor/llama/, with native/llama/'s build info and compat shim, linked against the base library.
fn llamaBench(b: *std.Build, target: std.Build.ResolvedTarget, optimize: std.builtin.OptimizeMode, base: *std.Build.Step.Compile) *std.Build.Step.Compile {
    const mod = b.createModule(.{ .target = target, .optimize = optimize, .strip = optimize != .Debug, .link_libc = true, .link_libcpp = true });
    addCommon(b, mod, target.result.os.tag);
    for ([_][]const u8{ "native/llama", "vendor/llama", "vendor/llama/include", "vendor/llama/src", "vendor/llama/common" }) |d| mod.addIncludePath(b.path(d));
    // An absolute path: zig's cache check does not resolve a forced include through -I.
    const cxx_flags = common_cxx_flags ++ [_][]const u8{ "-include", b.pathFromRoot("native/llama/compat.h") };
    var srcs: std.ArrayList([]const u8) = .empty;
    var dir = b.build_root.handle.openDir("vendor/llama/src", .{ .iterate = true }) catch @panic("vendor/llama/src");
    defer dir.close();
    var it = dir.iterate();
    while (it.next() catch @panic("vendor/llama/src")) |e| {
        if (e.kind == .file and std.mem.endsWith(u8, e.name, ".cpp")) srcs.append(b.allocator, b.fmt("src/{s}", .{e.name})) catch @panic("OOM");
    }
    std.mem.sort([]const u8, srcs.items, {}, struct {
        fn lt(_: void, x: []const u8, y: []const u8) bool {
            return std.mem.lessThan(u8, x, y);
        }
    }.lt);
    srcs.append(b.allocator, "common/common.cpp") catch @panic("OOM");
    srcs.append(b.allocator, "common/log.cpp") catch @panic("OOM");
    mod.addCSourceFiles(.{ .root = b.path("vendor/llama"), .files = srcs.items, .flags = &cxx_flags });
    mod.addCSourceFiles(.{ .root = b.path("native/llama"), .files = &.{ "bench.cpp", "build-info.cpp" }, .flags = &cxx_flags });
    mod.addCSourceFile(.{ .file = b.path("native/llama/compat.c"), .flags = &common_c_flags });
    mod.linkLibrary(base);
    switch (target.result.os.tag) {
        .linux => {
            mod.addRPathSpecial("$ORIGIN/../lib");
            mod.linkSystemLibrary("dl", .{});
        },
        .macos => mod.addRPathSpecial("@loader_path/../lib"),
        else => {},
    }
    return b.addExecutable(.{ .name = "wsp-llama-bench", .root_module = mod });
}
