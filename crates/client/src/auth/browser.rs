//! Opening the user's browser on the authorization URL. Front ends replace this with their own
//! [`OpenBrowser`] (the desktop app asks first, naming the server and the authorization server).

use std::io;
use std::process::{Command, Stdio};
use std::sync::Arc;

/// Opens a URL for the user; an error means the user has to open it by hand.
pub type OpenBrowser = Arc<dyn Fn(&str) -> io::Result<()> + Send + Sync>;

/// `$BROWSER` when it is set, else the platform's opener.
pub fn open_in_browser(url: &str) -> io::Result<()> {
    open_with_browser_var(std::env::var("BROWSER").ok().as_deref(), url)
}

/// As [`open_in_browser`] with `browser` standing for `$BROWSER`: the first of its
/// `:`-separated commands, split at whitespace, `%s` replaced by the URL (or the URL appended).
pub fn open_with_browser_var(browser: Option<&str>, url: &str) -> io::Result<()> {
    let mut command = match browser.and_then(|b| b.split(':').map(str::trim).find(|c| !c.is_empty())) {
        Some(line) => {
            let mut words = line.split_whitespace();
            let program = words.next().unwrap_or(line);
            let mut args: Vec<String> = words.map(str::to_owned).collect();
            if args.iter().any(|a| a.contains("%s")) {
                for a in &mut args {
                    *a = a.replace("%s", url);
                }
            } else {
                args.push(url.to_owned());
            }
            let mut c = Command::new(program);
            c.args(args);
            c
        }
        None => platform_opener(url),
    };
    let mut child = command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn()?;
    // Reaped in the background: a browser command may run for as long as the browser does.
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(())
}

fn platform_opener(url: &str) -> Command {
    #[cfg(target_os = "macos")]
    {
        let mut c = Command::new("open");
        c.arg(url);
        c
    }
    #[cfg(windows)]
    {
        // Not `cmd /C start`, which would read the `&`s of the query as command separators.
        let mut c = Command::new("rundll32");
        c.arg("url.dll,FileProtocolHandler").arg(url);
        c
    }
    #[cfg(not(any(target_os = "macos", windows)))]
    {
        let mut c = Command::new("xdg-open");
        c.arg(url);
        c
    }
}
