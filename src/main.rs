use clap::Parser;

fn main() {
    let cli = stage2::cli::Cli::parse();
    stage2::logging::init(cli.quiet, cli.verbose);
    let code = match stage2::commands::run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("stage2: error: {err:#}");
            stage2::error::exit_code_of(&err)
        }
    };
    std::process::exit(code);
}
