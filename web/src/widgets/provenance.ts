// Compiled-kernel provenance in event details: the text of each row, kept free of the DOM so it is testable.
import type { CompiledCode, KernelProvenance } from "../lib/api";

export interface ProvenanceRow { kernel: string; nodes: string; sources: { where: string; file: string; code: string }[]; }

/** Short file name with the line, then the function: `model.py:12 forward` (the full path goes in a title). */
export function sourceWhere(s: { file: string; line: number; function: string }): string {
  const base = s.file.split(/[\\/]/).pop() || s.file;
  return `${base}:${s.line >= 0 ? s.line : "?"} ${s.function}`.trimEnd();
}

/** Graph nodes fused into the kernel, with the model-level nodes they came from when those differ. */
export function nodesText(k: KernelProvenance): string {
  const post = k.post_grad_nodes.join(", ");
  const pre = k.pre_grad_nodes.join(", ");
  if (!post && !pre) return "no graph nodes recorded";
  return pre && pre !== post ? `${post || "—"} (from ${pre})` : post || pre;
}

export function provenanceRows(entry: CompiledCode): ProvenanceRow[] {
  return entry.kernels.map((k) => ({
    kernel: k.kernel, nodes: nodesText(k),
    sources: k.source.map((s) => ({ where: sourceWhere(s), file: s.file, code: s.code })),
  }));
}
