from walletpass_tui.cli import main

raise SystemExit(main())
