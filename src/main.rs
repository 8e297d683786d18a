use clap::Parser;

fn main() {
    let cli = match stage2::cli::Cli::try_parse() {
        Ok(cli) => cli,
        // `--help > /dev/full` did not reach its reader either: settled like any command.
        Err(e) => std::process::exit(stage2::out::settle(stage2::cli::usage_error(&e))),
    };
    stage2::term::init(cli.color);
    stage2::logging::init(cli.quiet, cli.verbose);
    let code = match stage2::commands::run(cli) {
        Ok(code) => code,
        Err(err) => {
            stage2::logging::error(&format!("{err:#}"));
            stage2::error::exit_code_of(&err)
        }
    };
    std::process::exit(stage2::out::settle(code));
}
