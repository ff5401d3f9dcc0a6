//! The command registry: `registry.in` declares each command once, and everything that must name
//! the commands is derived from it here and in `build.rs`, so none can drift from the others.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;

use serde_json::Value;
use taskdeck_engine::{LogLine, ServerStatus, Settings, SettingsUpdate, TaskEvent, ToolInfo};
use ts_rs::{Config, Dependency, TS, TypeVisitor};

use crate::commands::{self, AnswerPayload, AppInfo, CommandError, ModelTest, TaskDetail, TaskSummary};
use crate::history::{DeleteScope, ExportScope, PageCursor, Snippet, TaskFilter, TaskPage};
use crate::links::OfferedUrl;
use taskdeck_store::{PurgeLine, StatusCounts};

macro_rules! commands {
    ($( $name:ident [$($ctx:ident),*] ( $($arg:ident : $ty:ty),* ) -> $ret:ty ; )*) => {
        /// Every command's name, in declaration order.
        pub const COMMANDS: &[&str] = &[$(stringify!($name)),*];

        /// The handler for `tauri::Builder::invoke_handler`: every command, and only those.
        pub fn handler() -> impl Fn(tauri::ipc::Invoke) -> bool + Send + Sync + 'static {
            tauri::generate_handler![$(commands::$name),*]
        }

        /// Never called: it fails to compile when a function's parameters or success type are not
        /// what its line in `registry.in` says, so the TypeScript map cannot promise what the
        /// handler does not take.
        #[allow(dead_code, clippy::redundant_closure_call)]
        fn signatures_match_the_registry() {
            $(
                let _ = |$($ctx,)* $($arg: $ty),*| responds::<$ret, _, _>(commands::$name($($ctx,)* $($arg),*));
            )*
        }

        /// `Commands.ts`: each command's arguments (named as the webview sends them) and response.
        pub fn typescript(cfg: &Config) -> String {
            let mut imports = Imports { cfg, found: BTreeMap::new() };
            let mut entries: Vec<String> = Vec::new();
            $(
                let args: Vec<String> = vec![$(format!("{}: {}", camel(stringify!($arg)), imports.name::<$ty>())),*];
                let args = if args.is_empty() { "Record<string, never>".to_owned() } else { format!("{{ {} }}", args.join("; ")) };
                entries.push(format!("  {}: {{ args: {}; response: {} }};", stringify!($name), args, imports.name::<$ret>()));
            )*
            render(&imports.found, &entries)
        }
    };
}

include!("registry.in");

/// What a command returns, now or later, when it succeeds with `T`.
trait Responds<T, When> {}
struct Now;
struct Later;
impl<T> Responds<T, Now> for Result<T, CommandError> {}
impl<T, F: Future<Output = Result<T, CommandError>>> Responds<T, Later> for F {}
fn responds<T, When, R: Responds<T, When>>(_: R) {}

/// Tauri's default: a command's `snake_case` parameter is sent as a `camelCase` key.
fn camel(name: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The exported types a command names, to import them in `Commands.ts`.
struct Imports<'a> {
    cfg: &'a Config,
    found: BTreeMap<String, PathBuf>,
}

impl Imports<'_> {
    fn name<T: TS + 'static + ?Sized>(&mut self) -> String {
        self.visit::<T>();
        T::name(self.cfg)
    }
}

impl TypeVisitor for Imports<'_> {
    fn visit<T: TS + 'static + ?Sized>(&mut self) {
        if let Some(dep) = Dependency::from_ty::<T>(self.cfg) {
            self.found.insert(dep.ts_name, dep.output_path);
        }
        // `Vec<ServerStatus>` names `ServerStatus` through its generics.
        T::visit_generics(self);
    }
}

fn render(imports: &BTreeMap<String, PathBuf>, entries: &[String]) -> String {
    let mut out = String::from(
        "// Generated from src-tauri/src/registry.in by src-tauri/tests/bindings.rs (`make bindings`). Do not edit.\n",
    );
    for (name, path) in imports {
        let module = path.with_extension("");
        out.push_str(&format!("import type {{ {name} }} from \"./{}\";\n", module.display()));
    }
    out.push_str("\n/** Every command the webview may call: what it sends, and what it receives on success. */\n");
    out.push_str("export type Commands = {\n");
    for e in entries {
        out.push_str(e);
        out.push('\n');
    }
    out.push_str("};\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_named_as_tauri_expects_them() {
        assert_eq!(camel("id"), "id");
        assert_eq!(camel("viewing_task_id"), "viewingTaskId");
    }
}
